"""The CLI's progress rows: drawn on a terminal from the first report, erased at the end, never elsewhere."""

from __future__ import annotations

import io
import threading

from rich.console import Console

from knowcode.progress import Phase
from knowcode.terminal_progress import UNITS, TerminalProgress, draws_on

ERASE_LINE = "\x1b[2K"  # what a transient display writes over its rows when it stops


class TtyBuffer(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def terminal() -> tuple[Console, TtyBuffer]:
    buffer = TtyBuffer()
    console = Console(file=buffer, force_terminal=True, force_interactive=True, color_system=None, width=120)
    return console, buffer


def test_every_phase_has_a_unit() -> None:
    assert set(UNITS) == set(Phase)


def test_nothing_is_drawn_off_a_terminal() -> None:
    buffer = io.StringIO()
    # force_terminal is what FORCE_COLOR does to rich: the stream is still a pipe, so nothing is drawn.
    for console in (Console(file=buffer), Console(file=buffer, force_terminal=True)):
        assert not draws_on(console)
        with TerminalProgress(console) as progress:
            progress(Phase.SCAN, 0, None)
            progress(Phase.PARSE, 1, 1)
    assert buffer.getvalue() == ""


def test_a_dumb_terminal_gets_nothing_either() -> None:
    console = Console(file=TtyBuffer(), force_terminal=True, force_interactive=False)
    assert not draws_on(console)


def test_nothing_is_drawn_before_the_first_report() -> None:
    console, buffer = terminal()
    with TerminalProgress(console):
        pass
    assert buffer.getvalue() == ""


def test_the_first_report_draws_its_row_at_once() -> None:
    console, buffer = terminal()
    with TerminalProgress(console) as progress:
        progress(Phase.SCAN, 0, None)
        assert "scanning files" in buffer.getvalue() and "0/?" in buffer.getvalue()


def test_rows_show_each_phase_its_counts_and_unit_then_vanish() -> None:
    console, buffer = terminal()
    with TerminalProgress(console) as progress:
        progress(Phase.SCAN, 0, None)
        progress(Phase.SCAN, 40, 40)
        progress(Phase.PARSE, 0, 40)
        for done in range(1, 41):
            progress(Phase.PARSE, done, 40)
    drawn = buffer.getvalue()
    assert "scanning files" in drawn and "40/40 files" in drawn
    assert ERASE_LINE in drawn.rsplit("parsing files", 1)[-1]  # the last frame was wiped, not left behind


def test_closing_twice_and_reporting_again_draw_fresh_rows() -> None:
    console, buffer = terminal()
    progress = TerminalProgress(console)
    progress(Phase.EMBED, 0, 10)
    progress.close()
    progress.close()
    before = len(buffer.getvalue())
    progress(Phase.EVALUATE, 0, 3)
    assert "evaluating queries" in buffer.getvalue()[before:]
    progress.close()


def test_reports_from_two_threads_are_safe() -> None:
    console, buffer = terminal()
    with TerminalProgress(console) as progress:
        def embed() -> None:
            for done in range(0, 201):
                progress(Phase.EMBED, done, 200)

        worker = threading.Thread(target=embed)
        worker.start()
        for done in range(0, 201):
            progress(Phase.SEARCH_INDEX, done, 200)
        worker.join()
    assert "embedding chunks" in buffer.getvalue() and "building the search index" in buffer.getvalue()
