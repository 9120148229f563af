"""``envgym sandbox``: build images and reap orphaned containers.

    envgym sandbox build [NAME...] [--all] [--force] [--dir DIR]   build recipes (unchanged ones are skipped)
    envgym sandbox gc [--images] [--dry-run]                        remove orphaned containers (+ stale images)

``gc --images`` removes envgym's image tags nothing asks for again (:func:`envgym.sandbox.images.stale_images`:
outdated recipe tags, and family images built FROM them), children first, keeping a parent an image that
stays is built on.

``add_parser(subparsers)`` is its ``envgym.cli`` entry point (the path every plug-in subcommand takes); each
command returns an exit code.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envgym._lazy import LazyConsole
from envgym.errors import EnvgymError

out = LazyConsole()  # rich loads when a command prints, not for --help
# envgym.sandbox.images.SANDBOXES (this file sits beside it), written out: importing images (hashlib, tarfile,
# subprocess) would cost `envgym --help` a third of its time; tests/test_cli_help.py keeps them equal
SANDBOXES = Path(__file__).resolve().parents[2] / "sandboxes"


def _cmd_build(args: argparse.Namespace) -> int:
    from envgym.sandbox.images import build, recipes

    root = Path(args.dir)
    names = list(recipes(root)) if args.all else args.names
    if not names:
        raise EnvgymError("name an image (a folder of sandboxes/) or pass --all")
    for tag, built in build(names, root=root, force=args.force, log=out.print if args.verbose else lambda _: None):
        out.print(f"{tag}  {'[green]built[/]' if built else 'up to date'}")
    return 0


async def _gc(dry_run: bool) -> list[tuple[str, str]]:
    from envgym.sandbox.docker import DockerEngine
    from envgym.sandbox.reaper import MANAGED, orphan_reason, reap

    async with DockerEngine() as engine:
        if not dry_run:
            return await reap(engine)
        containers = await engine.call("containers", all=True, filters={"label": f"{MANAGED}=1"})
        found = [(c["Id"][:12], orphan_reason(c.get("Labels") or {})) for c in containers]
        return [(cid, reason) for cid, reason in found if reason]


def _cmd_gc(args: argparse.Namespace) -> int:
    import asyncio

    from envgym.sandbox.images import remove_images, stale_images

    reaped = asyncio.run(_gc(args.dry_run))
    verb = "would remove" if args.dry_run else "removed"
    for cid, reason in reaped:
        out.print(f"{verb} container {cid} ({reason})")
    out.print(f"{verb} {len(reaped)} orphaned container(s)")
    if args.images:
        stale = stale_images(Path(args.dir))
        if not args.dry_run:
            stale = remove_images(stale)
        for image in stale:
            if image.kept is None:
                out.print(f"{verb} image {image.tag} ({image.reason})")
            else:
                out.print(f"kept image {image.tag} ({image.reason}, but {image.kept})")
        removed = sum(image.kept is None for image in stale)
        out.print(f"{verb} {removed} stale image tag(s), kept {len(stale) - removed}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``sandbox build`` and ``sandbox gc`` to the ``envgym`` command line."""
    p = subparsers.add_parser("sandbox", help="sandbox images and orphaned containers")
    sub = p.add_subparsers(dest="sandbox_command", required=True)
    b = sub.add_parser("build", help="build sandbox images (content-hash tags: unchanged recipes are skipped)")
    b.add_argument("names", nargs="*", help="image names: folders of sandboxes/ (base is built when needed)")
    b.add_argument("--all", action="store_true", help="every recipe")
    b.add_argument("--force", action="store_true", help="rebuild even when the tag exists")
    b.add_argument("--dir", default=str(SANDBOXES), help="the sandboxes/ folder (default: this checkout's)")
    b.add_argument("--verbose", "-v", action="store_true", help="show build output")
    b.set_defaults(fn=_cmd_build)
    g = sub.add_parser("gc", help="remove containers whose owner is gone or whose expiry passed")
    g.add_argument("--images", action="store_true", help="also remove envgym images of outdated recipes, and family "
                   "images (envgym-mcp/..., envgym-swe/...) built FROM them")
    g.add_argument("--dry-run", action="store_true", help="list, remove nothing")
    g.add_argument("--dir", default=str(SANDBOXES), help="the sandboxes/ folder (for --images)")
    g.set_defaults(fn=_cmd_gc)
    return p
