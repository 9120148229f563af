"""``envgym sandbox gc --images`` on real images: tiny recipes built FROM the base image (one LABEL each, offline, a
second apiece), a family image (``envgym-mcp/...``) built FROM one of them, and someone's own image on top.

A stale family image goes with the recipe image it was built FROM, children go before their parents, and a
parent that an image which stays is built on is kept (listed with the reason), never removed from under it."""

from __future__ import annotations

import io
import secrets
import shutil

import pytest

from envgym.sandbox.images import SANDBOXES, StaleImage, build, recipes, remove_images, stale_images

pytestmark = pytest.mark.docker


@pytest.fixture
def api():
    import docker

    client = docker.APIClient(version="auto")
    yield client
    client.close()


def _build_from(api, parent: str, tag: str) -> None:
    dockerfile = f"FROM {parent}\nLABEL envgym.test=gc\n".encode()
    for chunk in api.build(fileobj=io.BytesIO(dockerfile), tag=tag, network_mode="none", rm=True, decode=True):
        assert "error" not in chunk, chunk


def _exists(api, tag: str) -> bool:
    return any(tag in (i.get("RepoTags") or []) for i in api.images(name=tag.rsplit(":", 1)[0]))


def test_gc_removes_stale_family_images_children_first_and_keeps_a_parent_an_image_stays_on(tmp_path, api):
    token = f"gc{secrets.token_hex(3)}"
    root = tmp_path / "sandboxes"
    shutil.copytree(SANDBOXES, root)
    (root / token).mkdir()
    (root / token / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nLABEL envgym.test.round=1\n")
    (root / f"{token}-kid").mkdir()
    (root / f"{token}-kid" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nLABEL envgym.test.kid=1\n")
    (root / f"{token}-kid" / "FROM").write_text(f"{token}\n")
    mine: list[str] = []
    try:
        old = recipes(root)
        old_parent, old_kid = old[token].tag, old[f"{token}-kid"].tag
        mine += [tag for tag, _ in build([f"{token}-kid"], root=root, log=lambda _: None) if token in tag]
        old_family, user = f"envgym-mcp/{token}:1", f"{token}-user/keep:1"
        _build_from(api, old_parent, old_family)
        _build_from(api, old_kid, user)  # someone's own image, on the kid of the old recipe
        mine += [old_family, user]
        (root / token / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nLABEL envgym.test.round=2\n")
        new = recipes(root)
        mine += [tag for tag, _ in build([f"{token}-kid"], root=root, log=lambda _: None) if token in tag]
        new_family = f"envgym-mcp/{token}:2"
        _build_from(api, new[token].tag, new_family)
        mine.append(new_family)

        def ours() -> list[StaleImage]:
            return [s for s in stale_images(root) if token in s.tag]

        first = ours()
        assert {s.tag: s.kept for s in first} == {
            old_family: None,  # built FROM the old recipe image: no longer asked for
            old_kid: f"the parent of {user}",
            old_parent: f"the parent of {user}",  # through the kid, which stays
        }, first
        assert [s.tag for s in first].index(old_kid) < [s.tag for s in first].index(old_parent)  # children first
        assert next(s.reason for s in first if s.tag == old_family) == f"built FROM {old_parent}, no longer current"
        assert remove_images(first) == first
        assert not _exists(api, old_family)
        assert all(_exists(api, t) for t in (old_kid, old_parent, user, new[token].tag, new[f"{token}-kid"].tag,
                                             new_family))

        api.remove_image(user)  # the image on top is gone: now the old chain goes, the kid before its parent
        second = ours()
        assert [(s.tag, s.kept) for s in second] == [(old_kid, None), (old_parent, None)], second
        container = api.create_container(old_kid, command=["true"], labels={"envgym.test": token})["Id"]
        try:  # ... but a container still uses the kid: Docker refuses its tag, and its parent stays with it
            held = remove_images(second)
        finally:
            api.remove_container(container, force=True)
        assert "is using its referenced image" in held[0].kept, held
        assert held[1].kept == f"the parent of {old_kid}, which stays", held
        assert _exists(api, old_kid) and _exists(api, old_parent)
        assert remove_images(ours()) == second  # the container gone, both go
        assert not _exists(api, old_kid) and not _exists(api, old_parent)
        assert all(_exists(api, t) for t in (new[token].tag, new[f"{token}-kid"].tag, new_family))
        assert ours() == []
    finally:
        for tag in reversed(mine):  # children were built after their parents
            if _exists(api, tag):
                api.remove_image(tag, force=True)
