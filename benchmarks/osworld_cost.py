"""OSWorld's published environment cost beside envgym's, measured on the imported OSWorld tasks.

    python benchmarks/osworld_cost.py [--tasks ID,ID,...] [--steps 10] [--episodes 2]

OSWorld runs each task in a virtual machine reverted to a snapshot; envgym runs ``gui/osworld-v1`` on the
``gui-osworld`` suite (tasks imported from OSWorld) in a fresh desktop container per episode. For each task
(default: four of the suite, the two feasible ones, a LibreOffice Calc one, a VLC one), ``--episodes``
episodes, one after the other in one process:

  reset     env.reset(task) wall time. The first episode of an image in the process is *cold* (nothing started:
            the container starts and its desktop comes up inside the reset); a later one is *warm* (the pool's
            spare desktop, started while the previous episode ran, is leased). OSWorld's docker provider
            stops the used VM's container and boots a new VM at every reset of a used env.
  step      --steps steps of ``pyautogui.moveTo`` code, each answered with OSWorld's observation
            (``observation="osworld"``: a PNG screenshot and the accessibility tree as XML): the env's own cost
            of a step, no agent (seconds a step, and steps/s). OSWorld's ``DesktopEnv.step`` sleeps ``pause``
            (default 2 s) after each action before it observes.
  memory    the episode's container after its reset and steps: Docker's figure (``docker stats``: usage less
            inactive file pages). OSWorld's docker provider gives each VM 4 GiB of RAM (the guest's size: QEMU's
            resident memory grows toward it as the guest touches pages, its page cache included).
  image     ``docker image inspect`` size of the image the task's desktop runs (unpacked), against OSWorld's VM
            disk image (qcow2) and its download (zip).

OSWorld's side is what it publishes (``PUBLISHED``: each figure with its source); nothing of OSWorld runs here
(its VM needs KVM and a 23.7 GB image). The table prints both, and published / measured. The host's load
average is printed with it: on a shared machine the timings move with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

import envgym
from envgym.task import load_tasks
from envgym.types import Action
from envgym_gui._samples import container_memory

SUITE = Path(__file__).parents[1] / "tasks" / "gui-osworld" / "tasks.jsonl"
DEFAULT_TASKS = [
    "osworld-os-e0df059f-28a6-4169-924f-b9623e7184cc",  # rename a folder (feasible; terminal)
    "osworld-os-7688b85f-87a4-4e4a-b2f8-f3d6c3f29b82",  # feasible; terminal
    "osworld-libreoffice_calc-2bd59342-0664-4ccb-ba87-79379096cc08",
    "osworld-vlc-5ac2891a-eacd-4954-b339-98abba077adb",  # the apps image (VLC)
]
GB = 1e9

# OSWorld's figures, each as published, with where. desktop-env 1.0.2 is the PyPI release that envgym's
# osworld extra installs (OSWorld's environment package: desktop_env/...).
PUBLISHED = {
    "image": (23.7 * GB, "Ubuntu.qcow2, 23.7 GB (huggingface.co/datasets/xlangai/ubuntu_osworld, files); "
                         "the docker provider downloads Ubuntu.qcow2.zip, 11.4 GB "
                         "(desktop-env 1.0.2 desktop_env/providers/docker/manager.py UBUNTU_X86_URL)"),
    "download": (11.4 * GB, "Ubuntu.qcow2.zip, 11.4 GB (same dataset page)"),
    "memory": (4 * 2**30, "RAM_SIZE 4G per VM, with CPU_CORES 4 and DISK_SIZE 32G (desktop-env 1.0.2 "
                          "desktop_env/providers/docker/provider.py, DockerProvider.__init__); on AWS a t3.medium "
                          "per VM, 2 vCPU / 4 GiB (desktop_env/providers/aws/manager.py INSTANCE_TYPE)"),
    "step_pause": (2.0, "DesktopEnv.step(action, pause=2) sleeps pause after every action "
                        "(desktop-env 1.0.2 desktop_env/desktop_env.py): at most 0.5 steps/s at the default"),
    "reset_wait": (3.0, "a used env's reset stops and removes the VM's container, sleeps WAIT_TIME 3 s, starts a "
                        "new one and polls its screenshot endpoint each 1 s until the VM has booted (timeout "
                        "300 s) (desktop-env 1.0.2 desktop_env/providers/docker/provider.py revert_to_snapshot, "
                        "stop_emulator, _wait_for_vm_ready); no boot time is published"),
}


async def episode(env, task, steps: int) -> dict:
    started = time.perf_counter()
    await env.reset(task=task)
    reset_s = time.perf_counter() - started
    points = [(200, 200), (600, 400)]
    started = time.perf_counter()
    for i in range(steps):
        obs, _, done, _, _ = await env.step(Action(text="pyautogui.moveTo({}, {})".format(*points[i % 2])))
        assert not done and obs.last_action_error is None, obs.last_action_error
        assert obs.osworld()["screenshot"].startswith(b"\x89PNG")
    step_s = (time.perf_counter() - started) / steps
    sandbox = env.unwrapped._sandbox
    memory = await container_memory(sandbox.engine, sandbox.id)
    image = await sandbox.engine.call("inspect_image", env.unwrapped.image)
    await env.step(Action(text="FAIL"))  # the kernel grades the episode; not measured
    return {"reset_s": reset_s, "step_s": step_s, "memory": memory.docker * 2**20, "image": image["Size"],
            "image_tag": env.unwrapped.image}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="task ids of the gui-osworld suite")
    parser.add_argument("--steps", type=int, default=10, help="moveTo steps timed per episode")
    parser.add_argument("--episodes", type=int, default=2, help="episodes per task (the first of an image: cold)")
    args = parser.parse_args()
    tasks = {t.id: t for t in load_tasks(SUITE)}
    rows, seen_images = [], set()
    async with envgym.make("gui/osworld-v1", observation="osworld") as env:
        for task_id in args.tasks.split(","):
            for _ in range(args.episodes):
                row = await episode(env, tasks[task_id], args.steps)
                row["cold"] = row["image_tag"] not in seen_images
                seen_images.add(row["image_tag"])
                rows.append({"task": task_id, **row})
                print(f"{task_id[:44]:44} {'cold' if row['cold'] else 'warm'} reset {row['reset_s']:5.1f} s  "
                      f"step {row['step_s']:.2f} s  memory {row['memory'] / 2**20:4.0f} MiB  "
                      f"image {row['image'] / GB:.2f} GB", flush=True)
    load = os.getloadavg()
    cold = [r["reset_s"] for r in rows if r["cold"]]
    warm = [r["reset_s"] for r in rows if not r["cold"]]
    step_s = statistics.median(r["step_s"] for r in rows)
    memory, top = statistics.median(r["memory"] for r in rows), max(r["memory"] for r in rows)
    images = {r["image_tag"]: r["image"] for r in rows}
    pub = {k: v[0] for k, v in PUBLISHED.items()}
    print(f"\n{len(rows)} episodes on {len({r['task'] for r in rows})} gui-osworld tasks; load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs\n")
    print("| cost | OSWorld (published) | envgym (measured) | OSWorld / envgym |\n|---|---|---|---|")
    for tag, size in sorted(images.items()):
        print(f"| image on disk ({tag}) | {pub['image'] / GB:.1f} GB (qcow2; {pub['download'] / GB:.1f} GB "
              f"download) | {size / GB:.2f} GB | {pub['image'] / size:.0f}x |")
    print(f"| memory per env | {pub['memory'] / 2**30:.0f} GiB (VM RAM) | {memory / 2**20:.0f} MiB (median; max "
          f"{top / 2**20:.0f}) | {pub['memory'] / memory:.0f}x |")
    print(f"| reset, cold | >= {pub['reset_wait']:.0f} s fixed wait + a VM boot (no figure published) | "
          f"{statistics.median(cold):.1f} s (median of {len(cold)}) | - |")
    if warm:
        print(f"| reset, warm | (as cold: a used VM is replaced at every reset) | "
              f"{statistics.median(warm):.1f} s (median of {len(warm)}) | - |")
    print(f"| seconds a step (env only) | >= {pub['step_pause']:.0f} s (the pause; <= {1 / pub['step_pause']:.1f} "
          f"steps/s) | {step_s:.2f} s ({1 / step_s:.1f} steps/s) | >= {pub['step_pause'] / step_s:.1f}x |")
    print("\nSources:")
    for name, (_, source) in PUBLISHED.items():
        print(f"- {name}: {source}")


if __name__ == "__main__":
    asyncio.run(main())
