"""One run at a time in a local output folder (pipelines.output_lock)."""

import os
import subprocess
import sys

import pytest

from pipelines.mine import main
from pipelines.output_lock import LOCK_NAME, OutputBusyError, output_lock
from tests.conftest import REPO


def test_a_second_run_into_a_folder_in_use_stops_at_once_naming_the_first(tmp_path, capsys):
    output = tmp_path / "out"
    with output_lock(str(output)):
        assert f"pid {os.getpid()} on " in (output / LOCK_NAME).read_text()
        assert main(["--output", str(output), "--stages", "extract"]) == 2
        err = capsys.readouterr().err
        assert f"{output}: another run is writing to it (pid {os.getpid()} on " in err
        assert not (output / "sentences").exists()  # nothing planned, cleared or written
    assert not output.exists()  # the holder made the folder and left it empty: its lock goes, and the folder
    assert main(["--output", str(output), "--stages", "extract"]) == 0  # released with its holder
    assert (output / "sentences").is_dir() and not (output / LOCK_NAME).exists()


def test_the_lock_goes_with_its_process_however_it_ends(tmp_path):
    output = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pipelines.output_lock import "
                               "output_lock\nwith output_lock(sys.argv[1]):\n    print('held', flush=True)\n"
                               "    time.sleep(60)", str(output)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusyError, match=f"pid {holder.pid} on "):
            with output_lock(str(output)):
                pass
    finally:
        holder.kill()  # no clean exit: the kernel drops the lock
        holder.wait()
    assert (output / LOCK_NAME).exists()  # the killed holder's file, but not its lock
    with output_lock(str(output)):
        assert f"pid {os.getpid()} on " in (output / LOCK_NAME).read_text()


def test_cloud_outputs_are_not_locked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with output_lock("gs://bucket/out"):
        pass
    assert not list(tmp_path.iterdir())  # no local folder made for a gs:// path


def test_a_lock_file_removed_between_open_and_lock_is_opened_again(tmp_path, monkeypatch):
    """The run before ends (and removes its lock file) between this run's open and its flock, and a third run locks
    a new file at the path: this run's lock on the removed file is no lock, and it finds the third run's."""
    import fcntl

    output = tmp_path / "out"
    output.mkdir()
    path = output / LOCK_NAME
    path.write_text("pid 1 on before\n")
    real, third = fcntl.flock, []

    def flock(handle, operation):
        if not third:
            path.unlink()
            third.append(open(path, "a+", encoding="utf-8"))  # noqa: SIM115
            real(third[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
            third[0].write("pid 3 on elsewhere\n")
            third[0].flush()
        return real(handle, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    with pytest.raises(OutputBusyError, match=r"another run is writing to it \(pid 3 on elsewhere\)"):
        with output_lock(str(output)):
            pytest.fail("two runs held the folder at once")
    third[0].close()  # the third run ends: the lock is free, at the same path
    with output_lock(str(output)):
        assert f"pid {os.getpid()} on " in path.read_text()
