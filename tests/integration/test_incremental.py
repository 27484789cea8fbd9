"""Incremental indexing ends in exactly the store a from-scratch run builds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from knowcode.indexing import IndexReport, index_repository, indexer
from knowcode.models import RelationKind
from knowcode.storage import Store
from tests.conftest import write_tree


def _index(root: Path, store_dir: Path) -> IndexReport:
    store = Store.open(store_dir)
    try:
        return index_repository(root, store, max_file_bytes=1 << 20, workers=1)
    finally:
        store.close()


def _snapshot(store_dir: Path) -> dict[str, object]:
    store = Store.open(store_dir, create=False)
    try:
        files = {path: (r.language, r.content_hash, r.size, r.line_count)
                 for path, r in store.file_records().items()}
        return {"files": files, "entities": store.entities(), "chunks": store.chunks(),
                "relationships": sorted(store.relationships(), key=repr), "skipped": store.skipped()}
    finally:
        store.close()


def _mutate(root: Path) -> None:
    # edit: rename a function that another file calls
    util = root / "pkg/util.py"
    util.write_text(util.read_text().replace("def slugify", "def make_slug"))
    # add: a file that defines the name the edit removed, and a new caller
    write_tree(root, {"pkg/text.py": "def slugify(text):\n    return text.strip()\n\n\n"
                                     "def shout(text):\n    return text.upper()\n",
                      "web/extra.js": "import { render } from './view.js';\nrender(1);\n"})
    # delete: a file others import from
    (root / "web/view.js").unlink()
    # rename: identical content under a new path
    shutil.move(root / "docs/guide.md", root / "docs/manual.md")


def test_incremental_run_equals_scratch_index(sample_repo: Path, tmp_path: Path) -> None:
    incremental = tmp_path / "incremental"
    _index(sample_repo, incremental)
    _mutate(sample_repo)
    report = _index(sample_repo, incremental)
    assert report.changed == ("pkg/util.py",)
    assert report.added == ("pkg/text.py", "web/extra.js")
    assert report.deleted == ("web/view.js",)
    assert report.renamed == (("docs/guide.md", "docs/manual.md"),)
    _index(sample_repo, tmp_path / "scratch")
    assert _snapshot(incremental) == _snapshot(tmp_path / "scratch")


def test_relationships_into_changed_files_are_re_resolved(sample_repo: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    _index(sample_repo, store_dir)

    def calls_to(name: str) -> set[str | None]:
        store = Store.open(store_dir, create=False)
        try:
            by_id = {e.id: e.qualified_name for e in store.entities()}
            return {by_id.get(r.target_id or "") for r in store.relationships()
                    if r.kind is RelationKind.CALLS and r.target_name == name}
        finally:
            store.close()

    assert calls_to("slugify") == {"pkg.util.slugify"}
    assert calls_to("shout") == {None}
    assert calls_to("render") == {"web.view.render"}
    _mutate(sample_repo)
    _index(sample_repo, store_dir)
    # Neither calling file changed. core.py imports slugify from pkg.util, where it is gone: the
    # import decides, so the new pkg.text.slugify is not guessed. scripts/run.py imports nothing, so
    # its call now resolves through the global name index to the one `shout` that appeared.
    assert calls_to("slugify") == {None}
    assert calls_to("shout") == {"pkg.text.shout"}
    assert calls_to("render") == {None}  # its definition was deleted: unresolved, not dangling


def test_unchanged_tree_parses_nothing(sample_repo: Path, tmp_path: Path) -> None:
    _index(sample_repo, tmp_path / "store")
    report = _index(sample_repo, tmp_path / "store")
    assert (report.parsed_files, report.added, report.changed, report.deleted) == (0, (), (), ())
    assert report.unchanged == len(list(p for p in sample_repo.rglob("*") if p.is_file()))


def test_touched_file_with_same_content_is_not_reported_changed(sample_repo: Path, tmp_path: Path) -> None:
    _index(sample_repo, tmp_path / "store")
    before = _snapshot(tmp_path / "store")
    target = sample_repo / "pkg/core.py"
    stat = target.stat()
    os.utime(target, (stat.st_atime, stat.st_mtime + 10))
    report = _index(sample_repo, tmp_path / "store")
    assert report.changed == ()
    assert _snapshot(tmp_path / "store") == before


def test_unchanged_files_re_resolve_when_as_many_files_were_deleted_as_kept(tmp_path: Path) -> None:
    # One caller kept, one file edited, two deleted: the kept caller's call must now resolve.
    root = write_tree(tmp_path / "repo", {
        "caller.py": "from lib import helper\n\n\ndef run():\n    return helper()\n",
        "lib.py": "X = 1\n", "old_a.py": "A = 1\n", "old_b.py": "B = 1\n"})
    _index(root, tmp_path / "incremental")
    (root / "lib.py").write_text("def helper():\n    return 1\n")
    (root / "old_a.py").unlink()
    (root / "old_b.py").unlink()
    _index(root, tmp_path / "incremental")
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")


def test_a_same_stem_file_of_another_language_renames_its_sibling_and_back(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {
        "bad.py": "def helper():\n    return 1\n",
        "main.py": "from bad import helper\n\n\ndef run():\n    return helper()\n"})

    def qualified_names(store_dir: Path) -> set[str]:
        store = Store.open(store_dir, create=False)
        try:
            return {e.qualified_name for e in store.entities() if e.name == "helper"}
        finally:
            store.close()

    _index(root, tmp_path / "incremental")
    (root / "bad.lua").write_text("local function helper()\n  return 1\nend\n")
    report = _index(root, tmp_path / "incremental")
    assert (report.added, report.changed) == (("bad.lua",), ())  # bad.py itself did not change
    assert qualified_names(tmp_path / "incremental") == {"bad_py.helper", "bad_lua.helper"}
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")
    (root / "bad.lua").unlink()
    _index(root, tmp_path / "incremental")
    assert qualified_names(tmp_path / "incremental") == {"bad.helper"}
    shutil.rmtree(tmp_path / "scratch")
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")


def test_editing_the_last_indexed_file_resolves_like_scratch(sample_repo: Path, tmp_path: Path) -> None:
    # The last file's relationships are the table's last rows: deleting them lowers the highest
    # rowid, and the run must still find (and resolve) exactly the rows it writes.
    incremental = tmp_path / "incremental"
    _index(sample_repo, incremental)
    view = sample_repo / "web/view.js"
    view.write_text("import { App } from './app.js';\n\nexport function render(app) {\n"
                    "  return new App().show() + String(app);\n}\n")
    report = _index(sample_repo, incremental)
    assert report.changed == ("web/view.js",)
    _index(sample_repo, tmp_path / "scratch")
    assert _snapshot(incremental) == _snapshot(tmp_path / "scratch")
    store = Store.open(incremental, create=False)
    try:
        calls = [r for r in store.relationships() if r.path == "web/view.js" and r.kind is RelationKind.CALLS]
    finally:
        store.close()
    assert any(r.target_id is not None for r in calls)


def test_a_run_that_finds_the_store_current_writes_nothing(sample_repo: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    _index(sample_repo, store_dir)
    database = store_dir / "index.db"
    before = (database.read_bytes(), _meta(store_dir))
    assert _index(sample_repo, store_dir).parsed_files == 0
    assert (database.read_bytes(), _meta(store_dir)) == before  # indexed_at included: no write at all
    # A run whose only change is the list of files left out writes it, and says when.
    (sample_repo / "secret.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    _index(sample_repo, store_dir)
    store = Store.open(store_dir, create=False)
    try:
        assert "secret.pem" in store.skipped()
    finally:
        store.close()
    assert _meta(store_dir)["indexed_at"] != before[1]["indexed_at"]


def _meta(store_dir: Path) -> dict[str, str]:
    store = Store.open(store_dir, create=False)
    try:
        return store.meta()
    finally:
        store.close()


def test_deleting_a_same_stem_file_that_failed_to_parse_renames_its_sibling(tmp_path: Path) -> None:
    # bad.lua cannot be decoded, so no run stores it, but it shares bad.py's module name while it
    # exists; deleting it renames bad.py although no stored file was parsed or removed.
    root = write_tree(tmp_path / "repo", {
        "bad.py": "def helper():\n    return 1\n",
        "main.py": "from bad import helper\n\n\ndef run():\n    return helper()\n"})
    (root / "bad.lua").write_bytes(b"local x = '\xff\xfe'\n")
    _index(root, tmp_path / "incremental")
    (root / "bad.lua").unlink()
    report = _index(root, tmp_path / "incremental")
    assert (report.parsed_files, report.changed, report.deleted) == (0, (), ())
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")


def test_edits_re_resolve_the_references_to_what_changed_and_only_that(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", {
        "lib.py": "def helper():\n    return 1\n\n\ndef util():\n    return 2\n\n\nclass Box:\n"
                  "    def open(self):\n        return 3\n",
        "caller.py": "from lib import helper\n\n\ndef run():\n    return helper() + util() + make()\n",
        "other.py": "def make():\n    return 0\n"})
    _index(root, tmp_path / "incremental")
    lib = root / "lib.py"
    edits = [
        lib.read_text().replace("return 1", "return 10"),  # a body: no name changes
        lib.read_text().replace("def util():\n    return 2", "class util:\n    pass"),  # a kind changes
        lib.read_text() + "\n\ndef make():\n    return 5\n",  # a name appears: `make` is now ambiguous
        lib.read_text().replace("class Box:\n    def open", "def open"),  # a parent changes
    ]
    for number, text in enumerate(edits):
        lib.write_text(text)
        os.utime(lib, (number + 10, number + 10))
        assert _index(root, tmp_path / "incremental").changed == ("lib.py",)
        shutil.rmtree(tmp_path / "scratch", ignore_errors=True)
        _index(root, tmp_path / "scratch")
        assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch"), number


def test_an_import_of_a_constant_follows_its_module_in_and_out(tmp_path: Path) -> None:
    # `LIMIT` is no entity: the import resolves to the module `cfg`, found through the part before
    # the last, so adding or deleting cfg.py must re-resolve it although no entity named LIMIT moved.
    root = write_tree(tmp_path / "repo", {
        "main.py": "from cfg import LIMIT\n\n\ndef run():\n    return LIMIT\n"})
    _index(root, tmp_path / "incremental")
    for step in ("add", "delete"):
        if step == "add":
            (root / "cfg.py").write_text("import os\n")  # no LIMIT entity in it
        else:
            (root / "cfg.py").unlink()
        _index(root, tmp_path / "incremental")
        shutil.rmtree(tmp_path / "scratch", ignore_errors=True)
        _index(root, tmp_path / "scratch")
        assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch"), step


def test_a_run_of_older_code_in_between_is_never_skipped(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Code that predates the module-name digest renames bad.py without recording a digest; when the
    # tree is back to the files of the recorded digest, its renames must still be undone.
    root = write_tree(tmp_path / "repo", {
        "bad.py": "def helper():\n    return 1\n",
        "main.py": "from bad import helper\n\n\ndef run():\n    return helper()\n"})
    _index(root, tmp_path / "incremental")
    (root / "bad.lua").write_text("local function helper()\n  return 1\nend\n")
    with monkeypatch.context() as older:
        older.setattr(indexer, "MODULE_NAMES_KEY", "a key older code does not know")
        _index(root, tmp_path / "incremental")
    (root / "bad.lua").unlink()
    _index(root, tmp_path / "incremental")
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")


def test_a_package_file_added_later_resolves_the_folder_imports_of_unchanged_files(tmp_path: Path) -> None:
    # `./utils` names a folder: its index file stands for it, so adding (or removing) that file must
    # re-resolve the imports of files that did not change, as a run from scratch resolves them
    root = write_tree(tmp_path / "repo", {
        "src/app.ts": "import { parse } from './utils';\nimport * as utils from './utils';\n\n"
                      "export function run() {\n  return parse(utils.other);\n}\n",
        "src/utils/other.ts": "export const other = 1;\n"})
    _index(root, tmp_path / "incremental")
    write_tree(root, {"src/utils/index.ts": "export function parse(s: string) {\n  return s;\n}\n"})
    assert _index(root, tmp_path / "incremental").added == ("src/utils/index.ts",)
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")
    store = Store.open(tmp_path / "incremental", create=False)
    try:
        imports = [r for r in store.relationships()
                   if r.path == "src/app.ts" and r.kind is RelationKind.IMPORTS]
    finally:
        store.close()
    assert [r.target_id is not None for r in imports] == [True, True]
    (root / "src/utils/index.ts").unlink()
    _index(root, tmp_path / "incremental")
    shutil.rmtree(tmp_path / "scratch")
    _index(root, tmp_path / "scratch")
    assert _snapshot(tmp_path / "incremental") == _snapshot(tmp_path / "scratch")
