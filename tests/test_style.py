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
    for path in sorted(REPO.glob("*/**/*.py")):
        if path.relative_to(REPO).parts[0] in {".venv", "build", "shared"}:
            continue
        source = path.read_text(encoding="utf-8")
        body = ast.parse(source).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            text = ast.get_source_segment(source, body[0].value) or ""
            if text[:1] not in "rR" and re.search(r"(?<!\\)(?:\\\\)*\\\n", text):
                joined.append(str(path.relative_to(REPO)))
    assert not joined, "module docstrings whose trailing backslash joins two lines: " + ", ".join(joined)


def _commands() -> list[str]:
    return sorted(".".join(path.relative_to(REPO).with_suffix("").parts)
                  for package in ("pipelines", "miner", "encoders", "training")
                  for path in (REPO / package).rglob("*.py") if '__name__ == "__main__"' in path.read_text("utf-8"))


@pytest.mark.parametrize("module", _commands())
def test_every_option_of_every_command_says_what_it_does(module, monkeypatch):
    """`python -m X --help` is where a newcomer learns a command: each option has a line of help, and the usage
    names the command as it is typed (`python -m X`, not the file's name)."""
    import argparse
    import importlib

    class Parsed(Exception):
        pass

    parsers = []

    def capture(self, *args, **kwargs):
        parsers.append(self)
        raise Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
    monkeypatch.setattr(argparse.ArgumentParser, "print_help", capture)  # the Beam jobs print theirs themselves
    with pytest.raises(Parsed):
        importlib.import_module(module).main(["--help"])

    def silent(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from silent(sub)
            elif action.option_strings and action.help is None:
                yield f"{parser.prog} {action.option_strings[-1]}"

    assert parsers[0].prog.startswith("python -m "), parsers[0].prog
    assert not list(silent(parsers[0]))


@pytest.mark.parametrize("module, argv", [
    ("miner.mine", ["--output", ""]),
    ("encoders.encode", ["--encoder", "char-ngram", "--input", "x.txt", "--output", " "]),
    ("training.average", ["--models", "a", "b", "--weights", "0.5", "0.5", "--output", ""]),
])
def test_an_empty_path_on_the_command_line_is_refused(module, argv, capsys, monkeypatch, tmp_path):
    """`--output "$OUT"` with OUT unset: Path("") is the working folder, where miner.mine wrote its bitext."""
    import importlib

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(module).main(argv)
    assert stopped.value.code == 2 and "empty: give a path" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
