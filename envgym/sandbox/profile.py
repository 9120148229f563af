"""Container profiles (how hardened a sandbox is) and the validator every container spec passes.

``DEFAULT`` is what every Docker sandbox gets unless told otherwise: ``--init``, network ``none``, all
capabilities dropped, ``no-new-privileges``, a pids limit, memory limit equal to memory+swap (no swap), a
CPU quota, file-size and open-file ulimits, no log driver, no bind mounts or devices, PID 1's child a
``sleep`` of the container's lifetime so an orphaned container ends by itself, and **bounded disk**: a
read-only root with size-capped tmpfs on every writable path (``/work``, ``/tmp``, ``/var/tmp``, ``/root``,
``/run``; 512 MiB in all). ``STRICT`` adds a non-root user and smaller, ``noexec`` ``/tmp``.

Disk: ``disk`` is the total a container may write. With ``read_only_root`` it is the sum of the tmpfs
sizes (checked: each tmpfs needs an absolute ``size=``, and they may not add up to more than ``disk``).
A writable root is bounded only where the engine's storage driver takes a size limit (overlay2 on xfs with
``pquota``, devicemapper, btrfs, zfs; probed once per engine by the Docker backend): it gets
``StorageOpt size`` = ``disk`` minus the tmpfs sizes. Where the driver has none (overlay2 on ext4, this
project's hosts), a writable root is refused unless the profile opts in with ``allow={"unbounded_disk"}``.
Docker's own ``/dev`` (64 MiB tmpfs, root only) and ``/dev/shm`` (64 MiB) come on top. **tmpfs pages are
charged to the container's memory cgroup**: what is written to a tmpfs counts against ``memory`` too, so the
memory limit bounds the total anyway, and a ``disk`` close to ``memory`` turns a full disk into an OOM kill
instead of ``ENOSPC``; keep ``disk`` well below ``memory`` (DEFAULT: 512 MiB of 1 GiB). A command that fills a
mount comes back with ``ExecResult.disk_full``.

:func:`validate_spec` refuses privileged mode, host namespaces, the Docker socket, added capabilities,
devices, bind mounts, unconfined security profiles and unbounded disk (a writable root without a size limit,
a tmpfs without an absolute ``size=``) unless the caller opts in by name through ``SandboxProfile.allow``
(``"privileged"``, ``"host_namespaces"``, ``"docker_socket"``, ``"cap_add"``, ``"devices"``, ``"binds"``,
``"unconfined"``, ``"unbounded_disk"``). Every spec is validated right before it is created.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envgym.sandbox.errors import SpecRejected

OptIn = Literal["privileged", "host_namespaces", "docker_socket", "cap_add", "devices", "binds", "unconfined",
                "unbounded_disk"]

WRITABLE = {
    "/work": "rw,exec,nosuid,size=256m,mode=1777",
    "/tmp": "rw,exec,nosuid,size=128m,mode=1777",
    "/var/tmp": "rw,exec,nosuid,size=64m,mode=1777",
    "/root": "rw,exec,nosuid,size=48m,mode=700",
    "/run": "rw,noexec,nosuid,size=16m,mode=755",
}
"""DEFAULT's writable paths (512 MiB in all): the workdir, the temporary directories, root's home, /run."""


class SandboxProfile(BaseModel):
    """Resource limits and hardening of one container."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "default"
    user: str | None = None
    """``uid[:gid]`` or a name; None keeps the image's user (root in envgym's images)."""
    workdir: str = "/work"
    read_only_root: bool = True
    """The image's filesystem cannot be written; only the ``tmpfs`` mounts can (see the module docstring)."""
    tmpfs: dict[str, str] = Field(default_factory=lambda: dict(WRITABLE))
    """Mount point -> tmpfs options (``size=64m,mode=1777``); every one needs an absolute ``size=``."""
    disk: str = "512m"
    """Total bytes the container may write: the tmpfs sizes plus, for a writable root, its size limit."""
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
    hostname: str | None = Field(default=None, pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
    """The container's hostname; None lets Docker use the container id (which differs per container, and so
    does anything that shows it: a shell prompt on a screenshot)."""
    extra_host_config: dict[str, Any] = Field(default_factory=dict)
    """Raw Docker HostConfig keys merged last; they pass the validator like everything else."""
    allow: frozenset[OptIn] = frozenset()
    """Explicit opt-ins for what the validator refuses by default."""


DEFAULT = SandboxProfile()
STRICT = DEFAULT.model_copy(update={
    "name": "strict",
    "user": "65534:65534",
    "tmpfs": {"/tmp": "rw,noexec,nosuid,size=64m,mode=1777", "/work": "rw,exec,nosuid,size=256m,mode=1777",
              "/var/tmp": "rw,noexec,nosuid,size=16m,mode=1777", "/run": "rw,noexec,nosuid,size=16m,mode=755"},
    "disk": "352m",
})
PROFILES = {"default": DEFAULT, "strict": STRICT}

_NAMESPACES = ("NetworkMode", "PidMode", "IpcMode", "UTSMode", "UsernsMode", "CgroupnsMode")


def tmpfs_size(options: str) -> int | None:
    """The ``size=`` of tmpfs mount options in bytes; None when absent or relative (``50%`` of host RAM)."""
    for opt in options.split(","):
        key, _, value = opt.strip().partition("=")
        if key == "size":
            try:
                return _bytes(value)
            except ValueError:
                return None
    return None


def container_spec(profile: SandboxProfile, image: str, labels: dict[str, str], *,
                   disk_quota: bool = False) -> dict[str, Any]:
    """The Engine API body (``POST /containers/create``) for ``image`` under ``profile``.

    ``disk_quota``: the engine's storage driver takes a size limit, so a writable root gets one.
    """
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
    sizes = [tmpfs_size(opts) for opts in profile.tmpfs.values()]
    in_tmpfs = sum(size or 0 for size in sizes)
    if in_tmpfs > _bytes(profile.disk):
        raise SpecRejected(f"profile {profile.name!r}: its tmpfs mounts add up to {in_tmpfs} bytes, more than "
                           f"its disk of {profile.disk}")
    if not profile.read_only_root and disk_quota:
        layer = _bytes(profile.disk) - in_tmpfs
        if layer < 1 << 20:
            raise SpecRejected(f"profile {profile.name!r}: its tmpfs mounts leave no room of its disk of "
                               f"{profile.disk} for the writable root")
        host_config["StorageOpt"] = {"size": str(layer)}
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
    if profile.hostname:
        spec["Hostname"] = profile.hostname
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
    if not hc.get("ReadonlyRootfs") and not (hc.get("StorageOpt") or {}).get("size"):
        problems.append(("unbounded_disk", "a writable root filesystem without a size limit (this engine's "
                                           "storage driver takes none: use read_only_root and tmpfs)"))
    for target, opts in (hc.get("Tmpfs") or {}).items():
        if tmpfs_size(str(opts)) is None:
            problems.append(("unbounded_disk", f"tmpfs {target} without an absolute size="))
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
