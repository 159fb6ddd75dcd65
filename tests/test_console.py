"""What every command shares: --quiet and --verbose change what a run prints; progress lines are bounded and carry
rates."""

import logging
import subprocess
import sys

from miner.console import Progress, setup_logging
from tests.conftest import REPO


def test_progress_logs_at_most_every_interval_with_a_rate(caplog):
    now = [0.0]
    progress = Progress(logging.getLogger("miner.test"), "embed", "sentences", total=1000, every_s=10,
                        clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="miner.test"):
        for _ in range(100):  # 100 batches of 10 over 50 s: a line at 10, 20, 30, 40 and 50 s, then the last
            now[0] += 0.5
            progress.add(10)
        progress.done()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 6
    assert lines[0] == "embed: 200 of 1,000 sentences in 10 s (20.0 sentences/s)"
    assert lines[-1] == "embed: 1,000 of 1,000 sentences in 50 s (20.0 sentences/s), done"


def test_quiet_and_verbose_set_our_levels():
    setup_logging(quiet=True)
    assert logging.getLogger("pipelines").getEffectiveLevel() == logging.WARNING
    setup_logging(verbose=True)
    assert logging.getLogger("miner").getEffectiveLevel() == logging.DEBUG
    setup_logging()
    assert logging.getLogger("encoders").getEffectiveLevel() == logging.INFO


def mine(output, *flags) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipelines.mine", "--output", str(output), *flags],
                          capture_output=True, text=True, timeout=600, check=True, cwd=REPO)


def test_the_pipeline_flags_change_what_is_printed(tmp_path):
    default = mine(tmp_path / "out")
    assert "INFO pipelines.mine: pairs: starting" in default.stderr and "all pairs against" in default.stdout
    quiet = mine(tmp_path / "out", "--quiet")  # finished stages: the same report, no INFO line
    assert " INFO " not in quiet.stderr and "DEBUG" not in quiet.stderr
    assert quiet.stdout.splitlines()[:-1] == default.stdout.splitlines()[:-1]  # the last names the seconds
    verbose = mine(tmp_path / "out", "--verbose", "--stages", "pairs", "--rerun")  # the libraries' INFO lines too
    ours = ("pipelines", "miner", "encoders", "training")
    others = [line for line in verbose.stderr.splitlines()
              if " INFO " in line and not line.split(" INFO ")[1].startswith(ours)]
    assert others and "pairs: starting" in verbose.stderr
    assert not [line for line in default.stderr.splitlines()
                if " INFO " in line and not line.split(" INFO ")[1].startswith(ours)]


def test_ctrl_c_is_one_line_and_status_130_and_libraries_tracebacks_of_it_are_not_shown(capsys, caplog):
    import logging

    from miner.console import INTERRUPTED, _not_an_interruption, exit_status
    from pipelines.job import interrupted

    def stopped():
        raise KeyboardInterrupt("stopped after step 9")

    assert exit_status(stopped) == INTERRUPTED == 130
    assert capsys.readouterr().err == "interrupted: stopped after step 9\n"
    try:
        raise RuntimeError("KeyboardInterrupt [while running 'embed/Embed']")  # how Beam passes one on
    except RuntimeError as err:
        assert interrupted(err) and not interrupted(ValueError("bad"))
        record = logging.LogRecord("apache_beam.runners.common", logging.ERROR, __file__, 1, str(err), None,
                                   (RuntimeError, err, None))
    assert not _not_an_interruption(record)
    assert _not_an_interruption(logging.LogRecord("x", logging.ERROR, __file__, 1, "a real error", None, None))


def test_what_the_machine_refuses_is_one_line_not_a_traceback(tmp_path, capsys):
    """A folder where a file goes, no permission, a full disk: said with the path, exit status 2."""
    from miner.console import exit_status

    def write_into_a_folder():
        (tmp_path / "out.npy").mkdir()
        open(tmp_path / "out.npy", "wb")

    assert exit_status(write_into_a_folder) == 2
    assert capsys.readouterr().err == f"error: Is a directory: {tmp_path / 'out.npy'}\n"
