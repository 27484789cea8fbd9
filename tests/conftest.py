"""Shared fixtures: tiny real repositories written into tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write {relative path: text} under root and return root."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


SAMPLE_REPO: dict[str, str] = {
    "pkg/__init__.py": "from .core import Engine\n",
    "pkg/core.py": (
        "from .util import helper, slugify\n\n\n"
        "class Base:\n    def start(self):\n        return 1\n\n\n"
        "class Engine(Base):\n"
        '    """Runs things."""\n\n'
        "    def run(self, text):\n        self.start()\n        return helper(slugify(text))\n"
    ),
    "pkg/util.py": (
        "def helper(value):\n    return value\n\n\n"
        "def slugify(text):\n    return text.lower()\n"
    ),
    "web/app.js": (
        "import { render } from './view.js';\n\n"
        "export class App {\n  show() {\n    return render(this);\n  }\n}\n"
    ),
    "web/view.js": "export function render(app) {\n  return String(app);\n}\n",
    "docs/guide.md": "# Guide\n\nHow to run.\n\n## Install\n\npip install\n",
    "notes.txt": "plain text\n\nsecond paragraph\n",
    "scripts/run.py": "def main():\n    return shout('x')\n",
}


@pytest.fixture
def sample_repo(tmp_path: Path) -> Path:
    """A small Python + JavaScript + Markdown repository."""
    return write_tree(tmp_path / "repo", SAMPLE_REPO)


def reads_can_be_denied(folder: Path) -> bool:
    """Whether chmod 000 stops this process reading a file (not as root, not on every filesystem)."""
    probe = folder / "probe"
    probe.write_text("x")
    probe.chmod(0)
    try:
        probe.read_bytes()
    except PermissionError:
        return True
    finally:
        probe.unlink()
    return False
