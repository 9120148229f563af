"""Container profiles (how hardened a sandbox is) and the validator every container spec passes.

``DEFAULT`` is what every Docker sandbox gets unless told otherwise: ``--init``, network ``none``, all
capabilities dropped, ``no-new-privileges``, a pids limit, memory limit equal to memory+swap (no swap), a
CPU quota, file-size and open-file ulimits, no log driver, no bind mounts or devices, and PID 1's child a
``sleep`` of the container's lifetime so an orphaned container ends by itself. ``STRICT`` adds a non-root
user, a read-only root filesystem and size-capped tmpfs mounts for the writable paths.

:func:`validate_spec` refuses privileged mode, host namespaces, the Docker socket, added capabilities,
devices, bind mounts and unconfined security profiles unless the caller opts in by name through
``SandboxProfile.allow`` (``"privileged"``, ``"host_namespaces"``, ``"docker_socket"``, ``"cap_add"``,
``"devices"``, ``"binds"``, ``"unconfined"``). Every spec is validated right before it is created.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envgym.sandbox.errors import SpecRejected

OptIn = Literal["privileged", "host_namespaces", "docker_socket", "cap_add", "devices", "binds", "unconfined"]


class SandboxProfile(BaseModel):
    """Resource limits and hardening of one container."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "default"
    user: str | None = None
    """``uid[:gid]`` or a name; None keeps the image's user (root in envgym's images)."""
    workdir: str = "/work"
    read_only_root: bool = False
    tmpfs: dict[str, str] = Field(default_factory=dict)
    """Mount point -> tmpfs options (``size=64m,mode=1777``); size-capped writable paths for read-only roots."""
    memory: str = "1g"
    """Memory limit; swap is set to the same value, so there is none."""
    cpus: float = 1.0
    pids_limit: int = 256
    nofile: int = 1024
    fsize_bytes: int = 1 << 30
    """Largest file a process may write."""
    lifetime_s: int = 3600
    """PID 1 sleeps this long, then the container ends even if nobody stops it."""
    environment: dict[str, str] = Field(default_factory=dict)
    extra_host_config: dict[str, Any] = Field(default_factory=dict)
    """Raw Docker HostConfig keys merged last; they pass the validator like everything else."""
    allow: frozenset[OptIn] = frozenset()
    """Explicit opt-ins for what the validator refuses by default."""


DEFAULT = SandboxProfile()
STRICT = DEFAULT.model_copy(update={
    "name": "strict",
    "user": "65534:65534",
    "read_only_root": True,
    "tmpfs": {"/tmp": "rw,noexec,nosuid,size=64m,mode=1777", "/work": "rw,exec,nosuid,size=256m,mode=1777"},
})
PROFILES = {"default": DEFAULT, "strict": STRICT}

_NAMESPACES = ("NetworkMode", "PidMode", "IpcMode", "UTSMode", "UsernsMode", "CgroupnsMode")


def container_spec(profile: SandboxProfile, image: str, labels: dict[str, str]) -> dict[str, Any]:
    """The Engine API body (``POST /containers/create``) for ``image`` under ``profile``."""
    host_config: dict[str, Any] = {
        "Init": True,
        "NetworkMode": "none",
        "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"],
        "PidsLimit": profile.pids_limit,
        "Memory": _bytes(profile.memory),
        "MemorySwap": _bytes(profile.memory),
        "NanoCpus": int(profile.cpus * 1e9),
        "Ulimits": [{"Name": "fsize", "Soft": profile.fsize_bytes, "Hard": profile.fsize_bytes},
                    {"Name": "nofile", "Soft": profile.nofile, "Hard": profile.nofile}],
        "LogConfig": {"Type": "none", "Config": {}},
        "ReadonlyRootfs": profile.read_only_root,
        "Tmpfs": dict(profile.tmpfs),
        "AutoRemove": False,
        "Privileged": False,
    }
    host_config.update(profile.extra_host_config)
    spec = {
        "Image": image,
        "Cmd": ["sleep", str(profile.lifetime_s)],
        "Entrypoint": [],
        "Env": [f"{k}={v}" for k, v in profile.environment.items()],
        "Labels": labels,
        "NetworkDisabled": True,
        "HostConfig": host_config,
    }
    if profile.workdir not in profile.tmpfs:  # Docker would re-create a tmpfs workdir as root, mode 0755
        spec["WorkingDir"] = profile.workdir
    if profile.user:
        spec["User"] = profile.user
    validate_spec(spec, allow=profile.allow)
    return spec


def validate_spec(spec: dict[str, Any], *, allow: frozenset[str] | set[str] = frozenset()) -> None:
    """Raise :class:`SpecRejected` for anything dangerous the caller did not opt in to by name."""
    hc = spec.get("HostConfig") or {}
    problems: list[tuple[str, str]] = []
    if hc.get("Privileged"):
        problems.append(("privileged", "privileged mode"))
    for key in _NAMESPACES:
        value = str(hc.get(key) or "")
        if value == "host" or value.startswith("container:"):
            problems.append(("host_namespaces", f"{key}={value}"))
    if hc.get("CapAdd"):
        problems.append(("cap_add", f"added capabilities {hc['CapAdd']}"))
    if hc.get("Devices") or hc.get("DeviceRequests") or hc.get("DeviceCgroupRules"):
        problems.append(("devices", "host devices"))
    sources = [str(b).split(":")[0] for b in hc.get("Binds") or []]
    sources += [str(m.get("Source", "")) for m in hc.get("Mounts") or [] if m.get("Type", "bind") == "bind"]
    sources += [str(m.get("Source", "")) for m in hc.get("Mounts") or [] if m.get("Type") == "volume"]
    for source in sources:
        if "docker.sock" in source or source.rstrip("/") in ("/var/run", "/run", "/"):
            problems.append(("docker_socket", f"the Docker socket (mount of {source!r})"))
        elif source:
            problems.append(("binds", f"a bind mount of {source!r}"))
    for opt in hc.get("SecurityOpt") or []:
        if "unconfined" in str(opt):
            problems.append(("unconfined", f"security option {opt!r}"))
    refused = [(name, what) for name, what in problems if name not in allow]
    if refused:
        raise SpecRejected("container spec refused: " + "; ".join(
            f"{what} (opt in with allow={{{name!r}}})" for name, what in refused))


def _bytes(size: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    size = size.strip().lower().removesuffix("b")
    if size and size[-1] in units:
        return int(float(size[:-1]) * units[size[-1]])
    return int(size)
