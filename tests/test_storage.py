"""Storage through Beam's FileSystems: the same calls on a local folder and on GCS (a real emulator)."""

import numpy as np
import pyarrow as pa
import pytest

from pipelines import storage


@pytest.fixture(params=["local", "gcs"])
def root(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "root")
    return request.getfixturevalue("gcs_bucket") + "/root"


def test_write_read_match_and_delete(root):
    storage.write_bytes(storage.join(root, "a", "x.bin"), b"one")
    storage.write_bytes(storage.join(root, "a", "x.bin"), b"two")  # replaces
    storage.write_json(storage.join(root, "a", "y.json"), {"k": [1, 2]})
    table = pa.table({"text": ["a", "b"], "n": [1, 2]})
    storage.write_parquet(storage.join(root, "b", "z.parquet"), table)
    assert storage.read_bytes(storage.join(root, "a", "x.bin")) == b"two"
    assert storage.read_json(storage.join(root, "a", "y.json")) == {"k": [1, 2]}
    assert storage.read_parquet(storage.join(root, "b", "z.parquet")).equals(table)
    names = [p.rsplit("/", 1)[-1] for p in storage.match(storage.join(root, "a", "*"))]
    assert names == ["x.bin", "y.json"]  # no temporary files left behind
    storage.delete_tree(storage.join(root, "a"))
    assert not storage.exists(storage.join(root, "a", "x.bin"))
    with pytest.raises(FileNotFoundError, match="no files match"):
        storage.match(storage.join(root, "a", "*"))


def test_remote_folder_is_copied_once_for_local_libraries(gcs_bucket, tmp_path):
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    np.save(model / "sub" / "w.npy", np.arange(3))
    remote = storage.stage_folder(str(model), gcs_bucket + "/staged/model")
    local = storage.local_folder(remote)
    assert storage.local_folder(remote) == local
    assert (np.load(f"{local}/sub/w.npy") == np.arange(3)).all()
    assert open(f"{local}/config.json").read() == "{}"


def test_downloaded_copies_are_removed_when_the_process_exits(gcs_bucket, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    remote = storage.stage_folder(str(model), gcs_bucket + "/staged/model")
    script = ("from pipelines import storage; import sys; "
              "print(storage.local_folder(sys.argv[1])); print(storage.local_file(sys.argv[1] + '/config.json'))")
    done = subprocess.run([sys.executable, "-c", script, remote], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parent.parent)
    folder, file = done.stdout.split()
    assert Path(folder).name.startswith("cmlm-") and Path(file).name == "config.json"  # copies, not the remote
    assert not Path(folder).exists() and not Path(file).exists()


def test_a_cloud_storage_failure_is_one_line_naming_the_path(gcs_bucket, tmp_path, capsys):
    # a bucket that does not exist (on the emulator the client answers 404 at once): exit status 2 and an error
    # line with the path, where the job printed Beam's nested BeamIOError as a traceback
    from pipelines.mine import main

    missing = "gs://cmlm-no-such-bucket/out"
    assert main(["--output", missing, "--quiet"]) == 2
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith("error:"))
    assert line.startswith(f"error: cloud storage ({missing}/") and "(NotFound)" in line
    assert "Traceback" not in err
    crawl = "gs://cmlm-no-such-bucket/crawl/*.warc.gz"  # the input, listed before any stage
    assert main(["--output", str(tmp_path / "out"), "--input", crawl, "--quiet"]) == 2
    assert f"error: input '{crawl}': cannot be listed (cloud storage (gs://cmlm-no-such-bucket/crawl/): 404" in \
        capsys.readouterr().err


def test_a_refused_request_says_how_beam_reads_credentials(monkeypatch):
    from apache_beam.io.filesystem import BeamIOError
    from google.api_core import exceptions

    refused = BeamIOError("Match operation failed", {"gs://b/x/**": BeamIOError("List operation failed", {
        "gs://b/x/": exceptions.Forbidden("GET .../b/b/o: Anonymous caller does not have storage.objects.list")})})
    for installed, hint in ((False, True), (True, False)):
        monkeypatch.setattr(storage, "_beam_reads_credentials", lambda installed=installed: installed)
        problem = storage.cloud_storage_problem(refused)
        assert problem.startswith("cloud storage (gs://b/x/): 403 GET") and "(Forbidden)" in problem
        assert ("pip install -e '.[gcp]'" in problem) == hint
    assert storage.cloud_storage_problem(ValueError("not storage")) is None
    assert storage.cloud_storage_problem(BeamIOError("x", {"gs://b/": OSError("disk")})) is None


def test_a_cloud_service_this_machine_cannot_reach_is_a_warning_at_once(monkeypatch, caplog):
    import socket

    from pipelines import storage

    with socket.socket() as closed:  # a real port that nothing listens on: the connection is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setitem(storage.SERVICE_ENDPOINTS, "gs", ("127.0.0.1", port, "STORAGE_EMULATOR_HOST"))
    for name in ("STORAGE_EMULATOR_HOST", *storage.PROXY_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    [warning] = storage.warn_if_unreachable(["gs://b/crawl/*.warc.gz", "gs://b/out", "/tmp/local"])
    assert warning.startswith(f"cannot connect to 127.0.0.1:{port} for the gs:// paths (") and warning in caplog.text
    assert storage.warn_if_unreachable(["/tmp/in", None]) == []  # no cloud path: nothing to reach
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:1")  # the emulator is what the client talks to
    assert storage.warn_if_unreachable(["gs://b/out"]) == []


def test_a_reachable_cloud_service_gives_no_warning(monkeypatch):
    import socket

    from pipelines import storage

    with socket.socket() as server:  # a real listening port stands for the service
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setitem(storage.SERVICE_ENDPOINTS, "gs", ("127.0.0.1", server.getsockname()[1], "NO_SUCH_VAR"))
        for name in storage.PROXY_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        assert storage.warn_if_unreachable(["gs://b/out"]) == []
