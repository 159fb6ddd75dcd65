"""Every command's command line: each option says what it does, the usage names the command as typed, and an
empty path (a script's unset variable) is refused rather than read as the working folder."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
