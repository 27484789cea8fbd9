"""Progress on a terminal: the CLI's side of the progress protocol (:mod:`knowcode.progress`).

Each phase gets a row (what, a bar, done/total, rate, time) drawn on stderr while the work runs and
erased when it ends, so stdout carries results only. Off a terminal (a pipe, a file, CI) nothing is
drawn at all.
"""

from __future__ import annotations

import threading
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from knowcode.progress import Phase

UNITS = {  # what each phase counts, as the rows name it
    Phase.SCAN: "files", Phase.PARSE: "files", Phase.RESOLVE: "references", Phase.SEARCH_INDEX: "chunks",
    Phase.EMBED: "chunks", Phase.EVALUATE: "queries",
}


class RateColumn(ProgressColumn):
    """Units per second, from rich's own speed estimate (blank until there is one)."""

    def render(self, task: Task) -> Text:
        """The rate of one row, e.g. ``1,204 files/s``."""
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} {task.fields['unit']}/s" if speed else "", style="progress.data.speed")


def draws_on(console: Console) -> bool:
    """Whether progress is drawn on this console: only on an interactive terminal.

    rich takes FORCE_COLOR (set by many CI runners) to mean "a terminal" even for a pipe; frames in a
    pipe or a log are noise, so the stream itself must be a tty.
    """
    isatty = getattr(console.file, "isatty", None)
    return console.is_interactive and callable(isatty) and bool(isatty())


class TerminalProgress:
    """A :data:`~knowcode.progress.ProgressCallback` drawing one row per phase on a terminal.

    Nothing shows until the first report, so commands that do no long work draw nothing. Use it as a
    context manager: leaving it erases the rows, before the command prints its result.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.enabled = draws_on(console)
        self._rows: Progress | None = None
        self._tasks: dict[Phase, TaskID] = {}
        self._lock = threading.Lock()  # reports come from the main thread and the embedding thread

    def __call__(self, phase: Phase, done: int, total: int | None) -> None:
        """Draw a report: the phase's row is added on its first report and updated on the next ones."""
        if not self.enabled:
            return
        with self._lock:
            rows = self._rows
            if rows is None:
                # stdout stays the command's own: only stray stderr writes go above the rows.
                rows = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("{task.fields[unit]}"), RateColumn(),
                                TimeRemainingColumn(elapsed_when_finished=True), console=self.console,
                                transient=True, redirect_stdout=False)
            task = self._tasks.get(phase)
            if task is None:
                task = self._tasks[phase] = rows.add_task(phase.value, total=total, unit=UNITS[phase])
            rows.update(task, completed=done, total=total)
            if self._rows is None:  # started once the first row exists, so the first frame shows it
                rows.start()
                self._rows = rows

    def close(self) -> None:
        """Erase the rows (the next report draws new ones)."""
        with self._lock:
            if self._rows is not None:
                self._rows.stop()
            self._rows = None
            self._tasks.clear()

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
