"""Client-side rate limiting per model (spec: LLM leg): RPM and RPD windows in SQLite, shared by processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from knowcode.errors import KnowCodeError
from knowcode.llm.rate_limiter import DAY_SECONDS, MINUTE_SECONDS, RateLimiter, RateLimitExceeded


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _take(limiter: RateLimiter, n: int) -> list[bool]:
    return [limiter.try_acquire() for _ in range(n)]


def test_per_minute_limit_and_sliding_window(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", "m", rpm=3, rpd=None, clock=clock)
    assert _take(limiter, 2) == [True, True]
    clock.advance(20)
    assert _take(limiter, 2) == [True, False]
    # The first two slots were taken at t=0 and free at t=60: 40 s from now.
    assert limiter.wait_seconds() == pytest.approx(40.0)
    clock.advance(39.5)
    assert not limiter.try_acquire()
    assert limiter.wait_seconds() == pytest.approx(0.5)
    clock.advance(0.5)  # exactly 60 s after the first two: both leave the window
    assert limiter.wait_seconds() == 0.0
    assert _take(limiter, 3) == [True, True, False]
    # Now the window holds t=20, t=60, t=60: the next slot frees when t=20 expires, at t=80.
    assert limiter.wait_seconds() == pytest.approx(20.0)


def test_per_day_limit(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", "m", rpm=None, rpd=2, clock=clock)
    assert _take(limiter, 3) == [True, True, False]
    clock.advance(3600)
    assert not limiter.try_acquire()
    assert limiter.wait_seconds() == pytest.approx(DAY_SECONDS - 3600)
    clock.advance(DAY_SECONDS - 3600)
    assert _take(limiter, 3) == [True, True, False]


def test_both_limits_wait_for_the_later_one(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", "m", rpm=2, rpd=3, clock=clock)
    assert _take(limiter, 3) == [True, True, False]
    assert limiter.wait_seconds() == pytest.approx(MINUTE_SECONDS)
    clock.advance(MINUTE_SECONDS)
    assert _take(limiter, 2) == [True, False]  # the minute has room, the day does not
    assert limiter.wait_seconds() == pytest.approx(DAY_SECONDS - MINUTE_SECONDS)


def test_none_is_unlimited_and_touches_no_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "rl.sqlite"
    limiter = RateLimiter(path, "m", rpm=None, rpd=None, clock=FakeClock())
    assert all(_take(limiter, 500))
    assert limiter.wait_seconds() == 0.0
    assert not path.exists()


def test_models_are_counted_separately(tmp_path: Path) -> None:
    clock = FakeClock()
    a = RateLimiter(tmp_path / "rl.sqlite", "a", rpm=1, rpd=None, clock=clock)
    b = RateLimiter(tmp_path / "rl.sqlite", "b", rpm=1, rpd=None, clock=clock)
    assert _take(a, 2) == [True, False]
    assert _take(b, 2) == [True, False]


def test_instances_share_the_file(tmp_path: Path) -> None:
    clock = FakeClock()
    first = RateLimiter(tmp_path / "rl.sqlite", "m", rpm=2, rpd=None, clock=clock)
    second = RateLimiter(tmp_path / "rl.sqlite", "m", rpm=2, rpd=None, clock=clock)
    assert [first.try_acquire(), second.try_acquire(), first.try_acquire()] == [True, True, False]


def test_acquire_raises_rate_limit_exceeded(tmp_path: Path) -> None:
    clock = FakeClock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", "gpt-x", rpm=1, rpd=None, clock=clock)
    limiter.acquire()
    clock.advance(15)
    with pytest.raises(RateLimitExceeded) as info:
        limiter.acquire()
    assert isinstance(info.value, KnowCodeError)
    assert info.value.model == "gpt-x"
    assert info.value.retry_after == pytest.approx(45.0)
    assert "gpt-x" in str(info.value)


def test_old_rows_are_pruned_and_file_is_wal(tmp_path: Path) -> None:
    path = tmp_path / "rl.sqlite"
    clock = FakeClock()
    limiter = RateLimiter(path, "m", rpm=None, rpd=100, clock=clock)
    assert all(_take(limiter, 5))
    clock.advance(DAY_SECONDS + 1)
    assert limiter.try_acquire()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM llm_requests").fetchone()[0] == 1
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


@pytest.mark.parametrize(("rpm", "rpd"), [(0, None), (None, 0), (-1, 5)])
def test_non_positive_limits_are_rejected(tmp_path: Path, rpm: int | None, rpd: int | None) -> None:
    with pytest.raises(ValueError):
        RateLimiter(tmp_path / "rl.sqlite", "m", rpm=rpm, rpd=rpd)


_WORKER = """
import sys
from pathlib import Path
from knowcode.llm.rate_limiter import RateLimiter

path, attempts = Path(sys.argv[1]), int(sys.argv[2])
sys.stdin.readline()  # start together
limiter = RateLimiter(path, "shared-model", rpm=25, rpd=40)
print(sum(limiter.try_acquire() for _ in range(attempts)))
"""


def test_two_processes_never_exceed_the_limit_together(tmp_path: Path) -> None:
    path = tmp_path / "rl.sqlite"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), "60"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    results = [worker.communicate(timeout=120) for worker in workers]
    for worker, (_, stderr) in zip(workers, results, strict=True):
        assert worker.returncode == 0, stderr
    granted = [int(stdout.strip()) for stdout, _ in results]
    # 120 attempts well inside one minute against rpm=25: exactly 25 granted between both processes.
    assert sum(granted) == 25
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM llm_requests").fetchone()[0] == 25
    finally:
        conn.close()
