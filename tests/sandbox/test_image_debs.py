"""Debian packages of derived images (``debs.txt``): parsed, resolved against a dpkg status, never the network."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from envgym.sandbox.images import SANDBOXES, apt_download_argv, missing_debs, read_list


def test_package_lists_skip_comments_and_blank_lines(tmp_path):
    listing = tmp_path / "debs.txt"
    listing.write_text("# the X server\nxvfb\n\n  openbox   # window manager\nxdotool xclip\n")
    assert read_list(listing) == ["xvfb", "openbox", "xdotool", "xclip"]
    assert "libreoffice-calc" in read_list(SANDBOXES / "desktop" / "debs.txt")


def test_the_apt_call_reads_the_given_status_and_writes_only_the_archive_folder(tmp_path):
    argv = apt_download_argv(["xvfb"], tmp_path / "status", tmp_path / "debs")
    assert argv[:4] == ["apt-get", "install", "--download-only", "--no-install-recommends"]
    assert f"Dir::State::status={tmp_path / 'status'}" in argv and f"Dir::Cache::archives={tmp_path / 'debs'}" in argv
    assert "Dir::Cache::pkgcache=" in argv and "Debug::NoLocking=1" in argv and argv[-1] == "xvfb"
    assert "--print-uris" in apt_download_argv(["xvfb"], tmp_path, tmp_path, print_only=True)


def _lists() -> None:
    lists = Path("/var/lib/apt/lists")
    if shutil.which("apt-get") is None or not any(lists.glob("*_Packages*")):
        pytest.fail("the host has no apt package lists: run `apt-get update` (sandboxes/host-setup.sh does)")


def test_only_what_the_status_lacks_is_resolved(tmp_path):
    _lists()
    empty = tmp_path / "empty"
    empty.write_text("")
    everything = missing_debs(["python3-xlib"], empty)
    assert {"python3-xlib", "python3.11", "libc6"} <= set(everything)
    host = Path("/var/lib/dpkg/status")
    have = {line.split(": ", 1)[1] for line in host.read_text().splitlines() if line.startswith("Package: ")}
    assert "libc6" in have
    needed = missing_debs(["python3-xlib"], host)
    assert "python3-xlib" in needed and "libc6" not in needed and set(needed) <= set(everything)
