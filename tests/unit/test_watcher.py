"""The watcher's start and stop, as a Ctrl-C can interleave them."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("watchfiles", reason="watchfiles (server extra) is not installed")

from knowcode.watcher import Watcher


def test_a_ctrl_c_inside_start_leaves_nothing_for_stop_to_join(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread.start() waits for the thread to run; a SIGINT there used to leave an unstarted thread
    that stop() joined ("cannot join thread before it is started"), so `knowcode mcp` exited 1."""
    watcher = Watcher(tmp_path, tmp_path / "store", None)

    def interrupted(self: threading.Thread) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(threading.Thread, "start", interrupted)
        with pytest.raises(KeyboardInterrupt):
            watcher.start()
    watcher.stop()  # nothing started, nothing to join
    watcher.start()  # and it can still start, and stop
    watcher.stop()
