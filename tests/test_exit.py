"""The pipeline commands exit with the job's status: no daemon thread still inside native code at exit can turn a
finished run into a crash (pipelines.job.end_process)."""

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

# A daemon thread inside faiss (the GIL released) when the command ends: at interpreter finalization such a thread
# is stopped where it stands, and a plain exit crashes in a good share of runs (SIGSEGV, or SIGABRT with
# "terminate called without an active exception").
BUSY_THREAD = textwrap.dedent("""
    import atexit, sys, threading, time
    import numpy as np, faiss
    faiss.omp_set_num_threads(1)
    vectors = np.random.default_rng(0).random((20000, 128), dtype=np.float32)
    index = faiss.IndexFlatIP(128)
    index.add(vectors)
    def search_forever():
        while True:
            index.search(vectors[:2000], 4)
    threading.Thread(target=search_forever, daemon=True).start()
    atexit.register(lambda: print("exit handler ran", flush=True))
    time.sleep(0.2)
    print("job done")
""")


@pytest.mark.parametrize("run", range(6))
def test_a_daemon_thread_in_native_code_does_not_change_the_exit_status(run):
    script = BUSY_THREAD + "from pipelines.job import end_process\nend_process(3)\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["job done", "exit handler ran"]  # flushed, and the handlers still run


def test_the_commands_exit_through_it_with_their_status(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pipelines.mine", "--output", str(tmp_path / "out"), "--input",
                           str(tmp_path / "missing-*.warc.gz")], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0 and "missing-" in done.stderr  # the error reached stderr before the exit
    for module in ("mine", "extract", "embed"):
        tail = (REPO / "pipelines" / f"{module}.py").read_text().rsplit('if __name__ == "__main__":', 1)[1]
        assert "end_process(main())" in tail, module
    assert "end_process(main())" in (REPO / "pipelines" / "pairs" / "__main__.py").read_text()  # a package's


def test_ctrl_c_ends_a_run_in_one_line_with_130_and_the_next_run_resumes(tmp_path):
    """Ctrl-C inside a stage came out as Beam's ERROR line with a traceback, then a RuntimeError's, exit status 1."""
    import signal
    import time

    output = tmp_path / "out"
    run = subprocess.Popen([sys.executable, "-m", "pipelines.mine", "--output", str(output)], cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    for line in run.stderr:  # the embed stage loads its encoder for a few seconds: the interruption lands there
        if "embed: starting" in line:
            time.sleep(1.0)
            run.send_signal(signal.SIGINT)
            break
    rest = run.stderr.read()
    assert run.wait(timeout=300) == 130, rest[-2000:]
    assert rest.endswith("interrupted: a stage stopped midway keeps what it saved, and the same command again "
                         "resumes it (docs/pipeline.md, Reruns)\n") and "Traceback" not in rest
    assert not (output / ".run.lock").exists()  # the lock went with the run
    again = subprocess.run([sys.executable, "-m", "pipelines.mine", "--output", str(output)], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "extract: finished in an earlier run" in again.stderr
