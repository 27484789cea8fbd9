"""The KnowCode facade: one repository, its index store and its configuration."""

from __future__ import annotations

from pathlib import Path

from knowcode.config import AppConfig, default_store_dir, load_config
from knowcode.indexing import IndexReport, index_repository
from knowcode.indexing.indexer import ProgressCallback
from knowcode.models import IndexStats
from knowcode.storage import Store


def _check_root(root: Path) -> Path:
    if not root.exists():
        raise FileNotFoundError(f"repository path does not exist: {root}")
    if not root.is_dir():
        raise NotADirectoryError(f"repository path is not a folder: {root}")
    return root.resolve()


class KnowCode:
    """A repository and its index; the index is built or brought up to date on first use."""

    def __init__(self, root: Path, store_dir: Path, config: AppConfig) -> None:
        self.root = root
        self.store_dir = store_dir
        self.config = config
        self._fresh = False

    @classmethod
    def from_path(cls, root: str | Path, store: str | Path | None = None,
                  config: AppConfig | str | Path | None = None) -> KnowCode:
        """Open a repository.

        :param root: the repository folder.
        :param store: the index folder; default: a per-user cache folder keyed by the root's path.
        :param config: settings, or a config file to read them from; default: the repository's own.
        :return: the facade; nothing is read or indexed until first use.
        :raises FileNotFoundError: the root or the config file does not exist.
        :raises NotADirectoryError: the root is not a folder.
        :raises ValueError: the config file is invalid.
        """
        resolved = _check_root(Path(root))
        if not isinstance(config, AppConfig):
            config = load_config(resolved, Path(config) if config is not None else None)
        store_dir = Path(store).resolve() if store is not None else default_store_dir(resolved)
        return cls(resolved, store_dir, config)

    def index(self, progress: ProgressCallback | None = None) -> IndexReport:
        """Index the repository, parsing only files that changed since the last run.

        :param progress: called with (files parsed, files to parse) as parsing goes.
        :return: what changed.
        :raises StoreError: the store cannot be opened or written.
        """
        store = Store.open(self.store_dir)
        try:
            report = index_repository(self.root, store, max_file_bytes=self.config.max_file_bytes,
                                      workers=self.config.parse_workers, progress=progress)
        finally:
            store.close()
        self._fresh = True
        return report

    def ensure_indexed(self) -> None:
        """Index once per facade, so the first query sees the current tree."""
        if not self._fresh:
            self.index()

    def open_store(self) -> Store:
        """Open the up-to-date store for reading (the caller closes it)."""
        self.ensure_indexed()
        return Store.open(self.store_dir, create=False)

    def stats(self) -> IndexStats:
        """Totals of the index: files, languages, entities, relationships, chunks, unresolved refs."""
        store = self.open_store()
        try:
            counts = store.counts()
            meta = store.meta()
        finally:
            store.close()
        indexed_at = meta.get("indexed_at")
        return IndexStats(root=str(self.root), store=str(self.store_dir),
                          indexed_at=float(indexed_at) if indexed_at else None, **counts)  # type: ignore[arg-type]


def open(root: str | Path, store: str | Path | None = None,  # noqa: A001 - the documented API name
         config: AppConfig | str | Path | None = None) -> KnowCode:
    """Open a repository for indexing and queries; see :meth:`KnowCode.from_path`."""
    return KnowCode.from_path(root, store=store, config=config)
