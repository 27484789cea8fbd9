"""The progress protocol: what indexing, queries and evaluation report, in which order, and the run's time."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from knowcode import engine as engine_module
from knowcode.config import AppConfig
from knowcode.engine import KnowCode
from knowcode.progress import Phase, no_progress
from tests.conftest import SAMPLE_REPO, write_tree

INDEX_PHASES = [Phase.SCAN, Phase.PARSE, Phase.RESOLVE, Phase.SEARCH_INDEX, Phase.EMBED]
BM25_ONLY = AppConfig(embedding_provider="none", parse_workers=1)


class Recorder:
    """A thread-safe ProgressCallback that keeps every report."""

    def __init__(self) -> None:
        self.reports: list[tuple[Phase, int, int | None]] = []
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, phase: Phase, done: int, total: int | None) -> None:
        with self._lock:
            self.reports.append((phase, done, total))
            self.threads.add(threading.current_thread().name)

    def phases(self) -> list[Phase]:
        """The phases in the order they started."""
        return list(dict.fromkeys(phase for phase, _, _ in self.reports))

    def of(self, phase: Phase) -> list[tuple[int, int | None]]:
        return [(done, total) for p, done, total in self.reports if p is phase]


def check_protocol(recorder: Recorder) -> None:
    """Each phase starts at 0, never goes back, and ends with done == total."""
    for phase in recorder.phases():
        reports = recorder.of(phase)
        assert reports[0][0] == 0, phase
        done = [d for d, _ in reports]
        assert done == sorted(done), phase
        assert reports[-1][0] == reports[-1][1], phase


def test_no_progress_accepts_every_report() -> None:
    for phase in Phase:
        no_progress(phase, 0, None)
        no_progress(phase, 3, 3)


def test_a_first_index_reports_every_phase_in_order(sample_repo: Path, tmp_path: Path) -> None:
    recorder = Recorder()
    engine = KnowCode.from_path(sample_repo, store=tmp_path / "store", progress=recorder)
    report = engine.index()
    assert recorder.phases() == INDEX_PHASES
    check_protocol(recorder)
    assert recorder.of(Phase.SCAN)[0] == (0, None)  # the file count is unknown until the scan ends
    assert recorder.of(Phase.SCAN)[-1] == (len(SAMPLE_REPO), len(SAMPLE_REPO))
    assert recorder.of(Phase.PARSE)[-1] == (report.parsed_files, report.parsed_files)
    assert [done for done, _ in recorder.of(Phase.PARSE)] == list(range(report.parsed_files + 1))
    chunks = engine.stats().chunks
    assert recorder.of(Phase.SEARCH_INDEX)[-1] == (chunks, chunks)
    assert recorder.of(Phase.EMBED)[-1] == (chunks, chunks)
    assert any(name.startswith("knowcode-embed") for name in recorder.threads)  # hence thread-safe callbacks


def test_an_index_with_nothing_to_do_reports_only_the_scan(sample_repo: Path, tmp_path: Path) -> None:
    KnowCode.from_path(sample_repo, store=tmp_path / "store", config=BM25_ONLY).index()
    recorder = Recorder()
    KnowCode.from_path(sample_repo, store=tmp_path / "store", config=BM25_ONLY).index(recorder)
    assert recorder.phases() == [Phase.SCAN]
    check_protocol(recorder)


def test_an_edit_reembeds_only_new_chunks(sample_repo: Path, tmp_path: Path) -> None:
    KnowCode.from_path(sample_repo, store=tmp_path / "store").index()
    write_tree(sample_repo, {"pkg/extra.py": "def extra():\n    return 2\n"})
    recorder = Recorder()
    KnowCode.from_path(sample_repo, store=tmp_path / "store", progress=recorder).index()
    assert recorder.phases() == INDEX_PHASES
    assert recorder.of(Phase.PARSE)[-1] == (1, 1)
    assert recorder.of(Phase.EMBED)[-1] == (1, 1)  # one new chunk; the others' vectors are reused


def test_a_query_that_indexes_reports_through_the_facade(sample_repo: Path, tmp_path: Path) -> None:
    recorder = Recorder()
    engine = KnowCode.from_path(sample_repo, store=tmp_path / "store", config=BM25_ONLY, progress=recorder)
    assert engine.search("helper")
    assert recorder.phases() == [Phase.SCAN, Phase.PARSE, Phase.RESOLVE, Phase.SEARCH_INDEX]


def test_an_explicit_callback_wins_over_the_facades(sample_repo: Path, tmp_path: Path) -> None:
    facade, explicit = Recorder(), Recorder()
    engine = KnowCode.from_path(sample_repo, store=tmp_path / "store", config=BM25_ONLY, progress=facade)
    engine.index(explicit)
    assert not facade.reports and explicit.phases()[0] is Phase.SCAN


def test_the_reported_time_covers_the_search_index_build(sample_repo: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pause = 0.3
    build = engine_module.update_search_index

    def slow_build(*args: object, **kwargs: object) -> bool:
        time.sleep(pause)
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine_module, "update_search_index", slow_build)
    started = time.perf_counter()
    report = KnowCode.from_path(sample_repo, store=tmp_path / "store", config=BM25_ONLY).index()
    assert pause <= report.seconds <= time.perf_counter() - started


def test_evaluation_reports_each_query(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", SAMPLE_REPO)
    entries = [{"query": q, "category": "symbol", "relevant": ["pkg/util.py"], "secondary": []}
               for q in ("where is helper defined", "slugify", "Engine run")]
    (tmp_path / "set.json").write_text(json.dumps(entries), encoding="utf-8")
    recorder = Recorder()
    KnowCode.from_path(repo, store=tmp_path / "store", config=BM25_ONLY,
                       progress=recorder).evaluate(tmp_path / "set.json")
    assert recorder.phases()[-1] is Phase.EVALUATE
    assert recorder.of(Phase.EVALUATE) == [(0, 3), (1, 3), (2, 3), (3, 3)]
    check_protocol(recorder)
