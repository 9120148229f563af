"""envgym_swe.containers: the hosts file every SWE sandbox mounts, written safely by concurrent starts."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from envgym_swe import containers


def test_hosts_file_written_by_many_threads_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a warm pool starts several sandboxes at once, each writing the hosts file from a worker thread; with one
    # temp name per process the second rename found the first one's temp file gone (FileNotFoundError)
    hosts = tmp_path / "swe" / "hosts"
    monkeypatch.setattr(containers, "HOSTS_FILE", hosts)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []
    real_write = Path.write_text

    def slow_write(self: Path, data: str, *args: object, **kwargs: object) -> int:
        written = real_write(self, data, *args, **kwargs)  # type: ignore[arg-type]
        if self.name.endswith(".tmp"):
            barrier.wait(timeout=10)  # every thread has written its temp file before any renames it
        return written

    monkeypatch.setattr(Path, "write_text", slow_write)

    def write() -> None:
        try:
            assert containers.write_hosts_file() == hosts
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert errors == []
    assert hosts.read_text() == containers.HOSTS
    assert sorted(p.name for p in hosts.parent.iterdir()) == ["hosts"]
