"""--save-facts: an existing file keeps its permissions, a write-protected one is refused, a new
one gets the usual ones, and a pipe is never waited on without end."""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest

from envcheck.facts import Facts, to_dict


@pytest.fixture
def snapshot(tmp_path) -> str:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(to_dict(Facts())))
    return str(path)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_an_existing_file_keeps_its_mode(cli, tmp_path, snapshot):
    target = tmp_path / "shared.json"
    target.write_text("old")
    target.chmod(0o644)
    assert cli("doctor", "--facts", snapshot, "--save-facts", str(target)).code in (0, 1)
    assert _mode(target) == 0o644
    assert json.loads(target.read_text())["schema_version"] == 2


def test_a_new_file_gets_the_usual_permissions(cli, tmp_path, snapshot):
    old = os.umask(0o022)
    try:
        target = tmp_path / "new.json"
        assert cli("doctor", "--facts", snapshot, "--save-facts", str(target)).code in (0, 1)
    finally:
        os.umask(old)
    assert _mode(target) == 0o644
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_write_protected_file_is_not_replaced(cli, tmp_path, snapshot):
    target = tmp_path / "keep.json"
    target.write_text("precious")
    target.chmod(0o444)
    result = cli("doctor", "--facts", snapshot, "--save-facts", str(target))
    assert result.code == 2 and result.err.count("\n") == 1
    assert "write-protected (mode 0444)" in result.err
    assert target.read_text() == "precious" and _mode(target) == 0o444


def test_a_pipe_nobody_reads_is_given_up_on(cli, tmp_path, snapshot, monkeypatch):
    import envcheck.commands.doctor as doctor

    monkeypatch.setattr(doctor, "SAVE_FACTS_WAIT", 0.5)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = cli("doctor", "--facts", snapshot, "--save-facts", str(fifo))
    assert result.code == 2 and "that nobody opened for reading within 0.5 s" in result.err


def test_a_pipe_whose_reader_comes_late_is_written(cli, tmp_path, snapshot):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Timer(0.3, lambda: got.append(fifo.read_text()))
    reader.start()
    assert cli("doctor", "--facts", snapshot, "--save-facts", str(fifo)).code in (0, 1)
    reader.join(10)
    assert json.loads(got[0])["schema_version"] == 2


def test_a_device_is_written_into(cli, snapshot):
    assert cli("doctor", "--facts", snapshot, "--save-facts", os.devnull).code in (0, 1)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
