import pytest

from envgym.sandbox import (
    ExecResult,
    FakeSandbox,
    SandboxCrashed,
    SandboxFileNotFound,
    SandboxPool,
    SandboxState,
    SandboxStateError,
    UnsafeArchive,
)


async def test_lifecycle_is_enforced():
    sb = FakeSandbox()
    assert sb.state is SandboxState.CREATED
    with pytest.raises(SandboxStateError, match="created"):
        await sb.exec("echo hi")
    async with sb:
        assert sb.state is SandboxState.RUNNING
        assert (await sb.exec("echo hi")).stdout == "hi\n"
        with pytest.raises(SandboxStateError):
            await sb.start()
    assert sb.state is SandboxState.STOPPED
    with pytest.raises(SandboxStateError, match="stopped"):
        await sb.read("/x")
    await sb.stop()  # idempotent


async def test_handler_results_output_cap_and_timeouts():
    def handler(cmd, cwd, env, user):
        if cmd == "big":
            return 0, "x" * 100
        return ExecResult(exit_code=3, stdout=cwd, stderr=env.get("A", ""))

    async with FakeSandbox(handler) as sb:
        r = await sb.exec("anything", cwd="/w", env={"A": "b"})
        assert (r.exit_code, r.stdout, r.stderr) == (3, "/w", "b")
        r = await sb.session.exec("big", max_output=10)
        assert r.truncated and r.stdout == "x" * 10
        r = await sb.exec("sleep 5", timeout=1)
        assert r.timed_out and r.exit_code is None
        assert sb.calls == ["anything", "big", "sleep 5"]


async def test_crash_is_typed_and_final():
    async with FakeSandbox() as sb:
        sb.crash()
        with pytest.raises(SandboxCrashed):
            await sb.exec("true")
        assert sb.state is SandboxState.FAILED
        with pytest.raises(SandboxCrashed):  # every later call says the same, never another type
            await sb.exec("true")
        assert not await sb.alive()


async def test_files_and_copies(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f.txt").write_text("F")
    async with FakeSandbox(files={"/work/a.txt": "A"}, symlinks={"/work/out/evil": "/etc/passwd"}) as sb:
        assert await sb.read("/work/a.txt") == b"A"
        await sb.write("/work/out/b.txt", "B")
        with pytest.raises(SandboxFileNotFound):
            await sb.read("/nope")
        await sb.copy_in(tmp_path / "src", "/work")
        assert await sb.read("/work/src/f.txt") == b"F"
        with pytest.raises(UnsafeArchive, match="evil"):
            await sb.copy_out("/work/out", tmp_path / "out")
        assert not (tmp_path / "out").exists()
        dest = await sb.copy_out("/work/src", tmp_path / "copy")
        assert (dest / "f.txt").read_text() == "F"
        with pytest.raises(FileExistsError):
            await sb.copy_out("/work/src", tmp_path / "copy")


async def test_pool_hands_out_fresh_sandboxes_and_stops_the_rest():
    made: list[FakeSandbox] = []

    def factory():
        made.append(FakeSandbox())
        return made[-1]

    async with SandboxPool("fake", 2, factory=factory) as pool:
        got = [await pool.acquire() for _ in range(3)]
        assert len({sb.id for sb in got}) == 3
        assert all(sb.state is SandboxState.RUNNING for sb in got)
        for sb in got:
            await sb.stop()
        async with pool.sandbox() as sb:
            assert sb.state is SandboxState.RUNNING
        assert sb.state is SandboxState.STOPPED
    assert pool.handed_out == 4
    assert all(sb.state is SandboxState.STOPPED for sb in made)  # ready ones were stopped by close
    with pytest.raises(SandboxStateError):
        await pool.acquire()


async def test_pool_surfaces_start_failures():
    class Broken(FakeSandbox):
        async def _start(self):
            raise SandboxCrashed("cannot start")

    async with SandboxPool("fake", 1, factory=Broken) as pool:
        with pytest.raises(SandboxCrashed, match="cannot start"):
            await pool.acquire()
