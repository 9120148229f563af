import io
import stat
import tarfile

import pytest

from envgym.sandbox import UnsafeArchive
from envgym.sandbox.tarsafe import extract


def archive(*members: tuple[str, str, str | bytes]) -> bytes:
    """(name, kind, payload): kind file | dir | sym | lnk | chr | fifo; payload is content or link target."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            data = None
            if kind == "file":
                data = payload.encode() if isinstance(payload, str) else payload
                info.size, info.mode = len(data), 0o4755
            else:
                info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "lnk": tarfile.LNKTYPE,
                             "chr": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}[kind]
                info.linkname = str(payload)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def test_good_tree_keeps_internal_links_and_drops_setuid(tmp_path):
    data = archive(("out", "dir", ""), ("out/a.txt", "file", "A"), ("out/sub", "dir", ""),
                   ("out/sub/link", "sym", "../a.txt"), ("out/hard", "lnk", "out/a.txt"))
    dest = extract(data, tmp_path / "copy", max_bytes=1 << 20)
    assert (dest / "a.txt").read_text() == "A"
    assert (dest / "sub" / "link").is_symlink() and (dest / "sub" / "link").read_text() == "A"
    assert not (dest / "hard").is_symlink() and (dest / "hard").read_text() == "A"
    assert not (dest / "a.txt").stat().st_mode & stat.S_ISUID
    assert [p.name for p in tmp_path.iterdir()] == ["copy"]  # no staging directory left


@pytest.mark.parametrize(("members", "why"), [
    ((("/etc/passwd", "file", "x"),), "absolute"),
    ((("out", "dir", ""), ("out/../../evil", "file", "x")), r"'\.\.'"),
    ((("out", "dir", ""), ("other/x", "file", "x")), "outside the top-level"),
    ((("out", "dir", ""), ("out/l", "sym", "/etc/passwd")), "absolute"),
    ((("out", "dir", ""), ("out/l", "sym", "../../etc/passwd")), "outside"),
    ((("out", "dir", ""), ("out/l", "sym", "..")), "outside"),
    ((("out", "sym", "/etc"),), "absolute"),
    ((("out", "sym", "x"),), "itself is a link"),
    ((("res", "dir", ""), ("res/peek", "sym", "../res")), "outside"),  # renamed to dest: peek would leave it
    ((("out", "dir", ""), ("out/a", "file", "A"), ("out/l", "sym", "../out/a")), "outside"),
    ((("out", "dir", ""), ("out/d", "dir", ""), ("out/d/l", "sym", ".."), ("out/x", "sym", "d/l/../..")),
     "outside"),  # lexically 'out', but the kernel climbs from d/l's target: above the destination
    ((("out", "dir", ""), ("out/a", "sym", "b"), ("out/b", "sym", "a")), "outside"),  # a loop
    ((("out", "dir", ""), ("out/l", "sym", "sub"), ("out/l/x", "file", "x")), "below the symlink"),
    ((("out", "dir", ""), ("out/l/x", "file", "x"), ("out/l", "sym", "sub")), "below a symlink"),
    ((("out", "dir", ""), ("out/dev", "chr", "")), "devices"),
    ((("out", "dir", ""), ("out/p", "fifo", "")), "devices"),
    ((("out", "dir", ""), ("out/h", "lnk", "/etc/shadow")), "hard link"),
    ((("out", "dir", ""), ("out/a", "file", "1"), ("out/a", "file", "2")), "twice"),
    ((("out", "dir", ""), ("out/big", "file", b"x" * 2048)), "more than"),
])
def test_hostile_members_refuse_the_whole_archive(tmp_path, members, why):
    with pytest.raises(UnsafeArchive, match=why):
        extract(archive(*members), tmp_path / "copy", max_bytes=1024)
    assert list(tmp_path.iterdir()) == []  # nothing written, not even partly


def test_links_resolve_against_the_destination_not_the_archive_name(tmp_path):
    """A link to the top entry by its archive name would point beside a differently named destination."""
    data = archive(("res", "dir", ""), ("res/f", "file", "F"), ("res/peek", "sym", "../res"))
    with pytest.raises(UnsafeArchive, match="peek"):
        extract(data, tmp_path / "copy", max_bytes=1 << 20)
    (tmp_path / "res").mkdir()  # what peek would have reached on the host
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]
    ok = archive(("res", "dir", ""), ("res/f", "file", "F"), ("res/d", "dir", ""), ("res/d/up", "sym", ".."),
                 ("res/d/f", "sym", "up/f"))
    dest = extract(ok, tmp_path / "copy", max_bytes=1 << 20)
    assert (dest / "d" / "f").read_text() == "F" and (dest / "d" / "up").resolve() == dest.resolve()


def _three_files() -> tuple[bytes, list[int]]:
    """An archive of out/ with three files, and the offsets where each member's header starts."""
    data = archive(("out", "dir", ""), *((f"out/f{i}", "file", "x" * (700 + i)) for i in range(3)))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return data, [m.offset for m in tar.getmembers()]


@pytest.mark.parametrize("cut", ["nothing", "garbage", "in the first header", "in a later header",
                                 "in a member's data", "at a member boundary", "before the end block"])
def test_a_garbage_or_truncated_archive_is_a_broken_archive_and_leaves_nothing(tmp_path, cut):
    # a raw tarfile.ReadError before; a cut at a member boundary even read as a smaller tree, silently
    from envgym.errors import SandboxError
    from envgym.sandbox import BrokenArchive

    data, offsets = _three_files()
    end = offsets[-1] + 512 + 1024  # the last member's header and its data (two blocks)
    broken = {"nothing": b"", "garbage": b"not a tar archive at all" * 40, "in the first header": data[:300],
              "in a later header": data[:offsets[2] + 100], "in a member's data": data[:offsets[2] + 512 + 200],
              "at a member boundary": data[:offsets[3]], "before the end block": data[:end]}[cut]
    with pytest.raises(BrokenArchive, match="copy-out got no whole tar archive") as caught:
        extract(broken, tmp_path / "copy", max_bytes=1 << 20)
    assert isinstance(caught.value, UnsafeArchive) and isinstance(caught.value, SandboxError)
    assert list(tmp_path.iterdir()) == []
    assert extract(data[:end + 512], tmp_path / "copy", max_bytes=1 << 20).joinpath("f2").read_text() == "x" * 702


def test_a_broken_archive_is_blamed_by_stage_infra_before_the_agent_acted_then_the_agents():
    from envgym.rollout import blame_of
    from envgym.sandbox import BrokenArchive
    from envgym.types import Blame

    exc = BrokenArchive("copy-out got no whole tar archive (0 bytes): empty file")
    assert blame_of(exc, "reset") is Blame.INFRA
    assert [blame_of(exc, stage) for stage in ("agent", "env", "verify")] == [Blame.AGENT] * 3
