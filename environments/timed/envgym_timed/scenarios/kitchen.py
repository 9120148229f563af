"""A kitchen: a planning world whose actions complete minutes later, while the cook does other things.

Tables: ``stations`` (burner, oven, board: how many jobs each holds at once), ``jobs`` (what to cook: the
station, how long it takes, which jobs must be collected first, how long it keeps once ready before it
burns) and ``dishes`` (which collected jobs make a dish). ``start_job`` occupies a station; the job is
ready ``seconds`` later (an ``alert`` from the job; in the sync variant at once), keeps ``hold_s`` on its
station, then burns unless collected. ``collect`` frees the station; ``serve`` needs every job of the dish
collected. Finishing by the deadline needs planning: long jobs first, short ones in their shadow.

The kitchen can say when the cook had something useful to do (:func:`opportunity`, the kernel's
``opportunity_idle_s``): a ready job to collect, a dish to serve, or a job a pending dish needs whose
prerequisites are collected and whose station has room.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from envgym.plugin import NoArgs
from envgym_timed.toolkit import Scenario, ToolFailure, tool
from envgym_timed.world import World


class JobArgs(BaseModel):
    job: str


class DishArgs(BaseModel):
    dish: str


def _job(world: World, job: str) -> dict[str, Any]:
    row = world.table("jobs").get(job)
    if row is None:
        raise ToolFailure(f"no job {job!r}; see list_jobs")
    return row


def _on(world: World, station: str) -> list[str]:
    """Jobs occupying a station: running, or ready and not yet collected."""
    return sorted(j["id"] for j in world.table("jobs").values()
                  if j["station"] == station and j["status"] in ("running", "ready"))


@tool("read", "List the jobs: station, duration, prerequisites, how long each keeps once ready, status.")
def list_jobs(world: World, args: NoArgs) -> list[dict[str, Any]]:
    return sorted(world.table("jobs").values(), key=lambda r: r["id"])


@tool("read", "Show the stations (capacity, jobs on them) and the dishes to serve.")
def kitchen_status(world: World, args: NoArgs) -> dict[str, Any]:
    stations = {sid: {"capacity": s["capacity"], "jobs": _on(world, sid)}
                for sid, s in sorted(world.table("stations").items())}
    return {"now": world.clock(), "stations": stations,
            "dishes": sorted(world.table("dishes").values(), key=lambda r: r["id"])}


@tool("write", "Start a job on its station (it is ready later: you get an alert from the job).")
def start_job(world: World, args: JobArgs) -> dict[str, Any]:
    job = _job(world, args.job)
    if job["status"] != "idle":
        raise ToolFailure(f"{args.job} is already {job['status']}")
    missing = [n for n in job["needs"] if _job(world, n)["status"] != "collected"]
    if missing:
        raise ToolFailure(f"{args.job} needs {', '.join(missing)} collected first")
    station = world.table("stations")[job["station"]]
    if len(_on(world, job["station"])) >= station["capacity"]:
        raise ToolFailure(f"the {job['station']} is full; collect something first")
    seconds = float(job["seconds"]) if world.variant == "async" else 0.0
    job.update(status="running", started=world.clock())
    name = args.job
    world.after_delay(seconds, [{"set": {"path": f"jobs.{name}.status", "value": "ready"}},
                                {"alert": {"source": name, "text": f"{name} is ready", "completes": True}}],
                      id=f"{name}:ready")
    if job.get("hold_s") is not None:
        world.after_delay(seconds + float(job["hold_s"]),
                          [{"set": {"path": f"jobs.{name}.status", "value": "burnt"}},
                           {"alert": {"source": name, "text": f"{name} burnt: it stayed too long"}}],
                          id=f"{name}:burnt", only_if=lambda: world.get(f"jobs.{name}.status") == "ready")
    return {"job": name, "ready_in_s": seconds}


@tool("write", "Take a ready job off its station (frees the station).")
def collect(world: World, args: JobArgs) -> dict[str, Any]:
    job = _job(world, args.job)
    if job["status"] != "ready":
        raise ToolFailure(f"{args.job} is {job['status']}, not ready")
    job["status"] = "collected"
    return {"job": args.job, "status": "collected"}


@tool("write", "Serve a dish (every job it needs must be collected).")
def serve(world: World, args: DishArgs) -> dict[str, Any]:
    dish = world.table("dishes").get(args.dish)
    if dish is None:
        raise ToolFailure(f"no dish {args.dish!r}")
    if dish["status"] == "served":
        raise ToolFailure(f"{args.dish} is already served")
    missing = [n for n in dish["needs"] if _job(world, n)["status"] != "collected"]
    if missing:
        raise ToolFailure(f"{args.dish} needs {', '.join(missing)} collected first")
    dish.update(status="served", served_at=world.clock())
    return {"dish": args.dish, "served_at": dish["served_at"]}


def _needed(world: World) -> set[str]:
    """Jobs the pending dishes need, with their prerequisites."""
    jobs = world.table("jobs")
    todo = [n for d in world.table("dishes").values() if d["status"] != "served" for n in d["needs"]]
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in found and name in jobs:
            found.add(name)
            todo.extend(jobs[name]["needs"])
    return found


def opportunity(world: World) -> bool:
    """Whether a useful action is available now (see the module docstring)."""
    jobs = world.table("jobs")
    if any(j["status"] == "ready" for j in jobs.values()):
        return True
    if any(d["status"] != "served" and all(jobs.get(n, {}).get("status") == "collected" for n in d["needs"])
           for d in world.table("dishes").values()):
        return True
    stations = world.table("stations")

    def startable(name: str) -> bool:
        job = jobs[name]
        return (job["status"] == "idle" and all(jobs.get(m, {}).get("status") == "collected" for m in job["needs"])
                and len(_on(world, job["station"])) < stations[job["station"]]["capacity"])

    return any(startable(n) for n in _needed(world))


SCENARIO = Scenario(
    name="kitchen",
    description="A kitchen where cooking takes time: plan, overlap jobs, collect before things burn.",
    tools=(list_jobs, kitchen_status, start_job, collect, serve),
    policy=("You are the cook. Jobs take time on their station and you are alerted when one is ready; "
            "a ready job burns if it stays on its station too long. Serve the dishes by the deadline. "
            "Start only jobs the dishes need. When everything is served, reply with a short summary."),
    opportunity=opportunity,
)
