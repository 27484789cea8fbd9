"""A client-side rate limiter per model (spec: LLM leg): requests per minute and per day, shared by processes.

Every granted request is one row ``(model, ts)`` in a small SQLite file. A request is granted when fewer than
``rpm`` rows of the model fall in the last 60 seconds and fewer than ``rpd`` in the last 86,400 seconds (both
windows slide; "per day" is a rolling 24 hours, not a calendar day). The check and the insert run in one
``BEGIN IMMEDIATE`` transaction, which takes SQLite's write lock up front, so separate processes sharing the
file never grant more than the limit between them. The file is in WAL mode; rows older than a day are pruned
on every grant check. ``None`` for a limit means unlimited; with both limits ``None`` the file is never
touched.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from knowcode.errors import KnowCodeError, StoreError

MINUTE_SECONDS = 60.0
DAY_SECONDS = 86_400.0
# How long a process waits for another one's write lock before SQLite gives up (seconds).
LOCK_TIMEOUT_SECONDS = 30.0
WAL_RETRY_SECONDS = 0.01  # pause between tries of the one-time switch to WAL when another process holds it

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS llm_requests (model TEXT NOT NULL, ts REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS llm_requests_model_ts ON llm_requests (model, ts)",
)


def _ensure_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL once (the mode persists in the file).

    Two processes creating the file at once can both try the switch; SQLite may report the loser's
    attempt as busy without waiting on the busy timeout, so it is retried until the timeout.
    """
    deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(WAL_RETRY_SECONDS)


class RateLimitExceeded(KnowCodeError):
    """A model's client-side request limit is used up; ``retry_after`` says how long until a slot frees."""

    def __init__(self, model: str, retry_after: float) -> None:
        self.model = model
        self.retry_after = retry_after
        super().__init__(
            f"client-side rate limit reached for model {model!r}; retry in {retry_after:.1f}s "
            "or raise its rpm/rpd in the [llm] configuration"
        )


class RateLimiter:
    """Requests per minute (``rpm``) and per day (``rpd``) for one model, counted in a SQLite file."""

    def __init__(
        self,
        path: Path,
        model: str,
        rpm: int | None,
        rpd: int | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, limit in (("rpm", rpm), ("rpd", rpd)):
            if limit is not None and limit < 1:
                raise ValueError(f"{name} must be a positive integer or None (unlimited), got {limit}")
        self.path = Path(path)
        self.model = model
        self.rpm = rpm
        self.rpd = rpd
        self._clock = clock

    @property
    def unlimited(self) -> bool:
        """True when neither limit is set."""
        return self.rpm is None and self.rpd is None

    def try_acquire(self) -> bool:
        """Take one request slot if both windows have room; False (and nothing recorded) otherwise."""
        if self.unlimited:
            return True
        with self._transaction() as conn:
            now = self._clock()
            conn.execute("DELETE FROM llm_requests WHERE ts <= ?", (now - DAY_SECONDS,))
            if self._wait(conn, now) > 0.0:
                return False
            conn.execute("INSERT INTO llm_requests (model, ts) VALUES (?, ?)", (self.model, now))
            return True

    def acquire(self) -> None:
        """Take one request slot, or raise :class:`RateLimitExceeded` with the seconds until one frees.

        :raises StoreError: the request log cannot be opened, read or written.
        """
        if not self.try_acquire():
            raise RateLimitExceeded(self.model, self.wait_seconds())

    def wait_seconds(self) -> float:
        """Seconds until :meth:`try_acquire` could succeed; 0.0 when a slot is free now."""
        if self.unlimited:
            return 0.0
        with self._transaction() as conn:
            return self._wait(conn, self._clock())

    def _wait(self, conn: sqlite3.Connection, now: float) -> float:
        wait = 0.0
        for limit, window in ((self.rpm, MINUTE_SECONDS), (self.rpd, DAY_SECONDS)):
            if limit is None:
                continue
            # The window is full when it holds `limit` rows; a slot frees when the row that would leave the
            # window count at limit - 1 expires: the `count - limit + 1`-th oldest one.
            rows = conn.execute(
                "SELECT ts FROM llm_requests WHERE model = ? AND ts > ? ORDER BY ts",
                (self.model, now - window),
            ).fetchall()
            if len(rows) >= limit:
                oldest_blocking = float(rows[len(rows) - limit][0])
                wait = max(wait, oldest_blocking + window - now)
        return max(wait, 0.0)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_SECONDS, isolation_level=None)
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"cannot open the LLM request log {self.path}: {err}") from err
        try:
            _ensure_wal(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA:
                    conn.execute(statement)
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as err:
            raise StoreError(f"the LLM request log {self.path} is unusable: {err}") from err
        finally:
            conn.close()
