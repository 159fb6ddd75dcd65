"""The repository passes its linter, ruff, with the rules pyproject.toml selects (pycodestyle errors and warnings,
pyflakes, import order): an unused import, an undefined name or a 200-column line fails the suite, not a review."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is a test extra: pip install -e '.[test]'")
def test_the_repository_passes_ruff():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_docstring_joins_its_lines_by_a_trailing_backslash():
    """A shell command written across lines in a module's docstring (`... \\` then the rest) loses its line break
    unless the backslash is doubled or the string raw: `--help` then prints one long line with the indentation
    inside it."""
    import ast
    import re

    joined = []
    for path in sorted(path for folder in ("pipelines", "miner", "encoders", "training", "bench", "sample", "tests")
                       for path in (REPO / folder).rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        body = ast.parse(source).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            text = ast.get_source_segment(source, body[0].value) or ""
            if text[:1] not in "rR" and re.search(r"(?<!\\)(?:\\\\)*\\\n", text):
                joined.append(str(path.relative_to(REPO)))
    assert not joined, "module docstrings whose trailing backslash joins two lines: " + ", ".join(joined)
