"""Recipes built FROM another recipe (a ``FROM`` file): order, tags, errors, and debs resolved against the parent."""

from __future__ import annotations

import shutil

import pytest

from envgym.sandbox.errors import SandboxError
from envgym.sandbox.images import SANDBOXES, build, recipe_hash, recipes


def _root(tmp_path, *copied: str):
    root = tmp_path / "sandboxes"
    root.mkdir()
    for name in ("base", *copied):
        shutil.copytree(SANDBOXES / name, root / name)
    return root


def _recipe(root, name: str, dockerfile: str, parent: str | None = None, **files: str) -> None:
    folder = root / name
    folder.mkdir()
    (folder / "Dockerfile").write_text(dockerfile)
    if parent is not None:
        (folder / "FROM").write_text(f"{parent}\n")
    for fname, text in files.items():
        (folder / fname.replace("_", ".")).write_text(text)


def test_a_from_file_names_the_parent_whose_tag_the_child_hashes(tmp_path):
    root = _root(tmp_path)
    _recipe(root, "zz-parent", "ARG BASE\nFROM ${BASE}\n")
    _recipe(root, "aa-child", "ARG BASE\nFROM ${BASE}\n", parent="zz-parent")  # sorts before its parent
    found = recipes(root)
    assert list(found).index("zz-parent") < list(found).index("aa-child")
    assert found["aa-child"].parent == "zz-parent" and found["zz-parent"].parent == "base"
    assert found["aa-child"].tag == f"envgym/aa-child:{recipe_hash(root / 'aa-child', found['zz-parent'].tag)}"
    (root / "zz-parent" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nRUN true\n")
    after = recipes(root)
    assert after["zz-parent"].tag != found["zz-parent"].tag
    assert after["aa-child"].tag != found["aa-child"].tag  # a changed parent rebuilds the child
    assert after["base"].tag == found["base"].tag


def test_recipes_without_a_from_file_keep_their_tags():
    found = recipes()
    for recipe in found.values():
        if recipe.name != "base" and not (recipe.path / "FROM").exists():
            assert recipe.parent == "base"
            assert recipe.tag == f"envgym/{recipe.name}:{recipe_hash(recipe.path, found['base'].tag)}"


@pytest.mark.parametrize(("layout", "message"), [
    ({"a": "nothere"}, "no image recipe 'nothere'"),
    ({"a": "a"}, "a -> a"),
    ({"a": "b", "b": "a"}, "a -> b -> a"),
    ({"a": "b c"}, "expected one recipe name"),
])
def test_a_bad_from_file_is_named(tmp_path, layout, message):
    root = _root(tmp_path)
    for name, parent in layout.items():
        _recipe(root, name, "ARG BASE\nFROM ${BASE}\n", parent=parent)
    with pytest.raises(SandboxError, match="FROM: line 1") as info:
        recipes(root)
    assert message in str(info.value)


@pytest.mark.docker
@pytest.mark.slow
def test_a_chain_builds_in_order_with_debs_resolved_against_the_parent(tmp_path):
    # The desktop image has xvfb and xdotool, the base does not: resolved against the parent nothing is
    # downloaded (the child's Dockerfile checks that debs/ is empty), against the base their closure would be.
    root = _root(tmp_path, "desktop")
    _recipe(root, "chain-one", 'ARG BASE\nFROM ${BASE}\nCOPY debs/ /tmp/debs/\n'
            'RUN test -z "$(ls /tmp/debs)" && test -x /usr/bin/Xvfb && echo one > /etc/chain-one\n',
            parent="desktop", debs_txt="xvfb xdotool\n")
    _recipe(root, "chain-two", "ARG BASE\nFROM ${BASE}\nRUN grep -qx one /etc/chain-one\n", parent="chain-one")
    logged: list[str] = []
    found = recipes(root)
    try:
        done = build(["chain-two"], root=root, log=logged.append)
        assert [tag for tag, _ in done] == [found[n].tag for n in ("base", "desktop", "chain-one", "chain-two")]
        assert done[2][1] and done[3][1]
        assert f"chain-one: 0 Debian packages resolved against {found['desktop'].tag}" in logged
        assert [built for _, built in build(["chain-two"], root=root, log=logged.append)] == [False] * 4
    finally:
        import docker

        api = docker.APIClient(version="auto")
        try:
            for name in ("chain-two", "chain-one"):
                if any(found[name].tag in (i.get("RepoTags") or []) for i in api.images(name=f"envgym/{name}")):
                    api.remove_image(found[name].tag, force=True)
        finally:
            api.close()
