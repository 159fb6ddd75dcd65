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
