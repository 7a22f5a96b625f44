"""The output folder under a kill at any instant, a full disk, and a rerun into a finished run.

The kill is simulated: every os.replace (the step that makes a written file visible) and the plot
may be where the process dies, for each of three epochs. Whatever instant it is, the resume point
must cover every epoch the history shows, so a resumed run retrains nothing that was finished.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("keras")

from envcheck.train import callbacks as cb
from envcheck.train import outputs
from envcheck.train.outputs import OutputFolder, atomic_path


class Killed(BaseException):
    """The process dying: nothing after it runs, not even except clauses for Exception."""


class FakeModel:
    stop_training = False

    def save_weights(self, path, overwrite=True):
        with open(path, "wb") as fh:
            fh.write(b"\x89HDF\r\n\x1a\nweights")


def fake_plot(rows, target, title=""):
    with atomic_path(target) as temp:
        temp.write_bytes(b"\x89PNG\r\n\x1a\n")


def _recorder(out, rows):
    recorder = cb.EpochRecorder(
        output=OutputFolder(out),
        is_chief=True,
        images_per_epoch=64,
        replicas=1,
        rows=rows,
        meta={"model": "MiniGoogLeNet"},
        resume_key={"seed": 0},
        plot_title="t",
    )
    recorder.set_model(FakeModel())
    return recorder


def _logs(epoch):
    return {"loss": 2.0 - 0.1 * epoch, "accuracy": 0.1 * epoch, "val_loss": 2.1, "val_accuracy": 0.1}


def _replace_calls_per_epoch(tmp_path, monkeypatch) -> int:
    calls = []
    real = os.replace
    monkeypatch.setattr(outputs.os, "replace", lambda a, b: (calls.append(b), real(a, b))[1])
    rows: list = []
    _recorder(tmp_path / "count", rows).on_epoch_end(0, _logs(0))
    monkeypatch.setattr(outputs.os, "replace", real)
    return len(calls)


def test_a_kill_at_any_instant_loses_no_finished_epoch(tmp_path, monkeypatch):
    monkeypatch.setattr(cb, "plot_history", fake_plot)
    per_epoch = _replace_calls_per_epoch(tmp_path, monkeypatch)
    assert per_epoch >= 4  # weights, state, history.json, history.csv, plot (and nothing unseen)
    real_replace = os.replace
    for epochs_before in range(3):
        for kill_at in range(per_epoch + 1):
            out = tmp_path / f"run-{epochs_before}-{kill_at}"
            rows: list = []
            recorder = _recorder(out, rows)
            for epoch in range(epochs_before):
                recorder.on_epoch_end(epoch, _logs(epoch))
            count = [0]

            def dying_replace(a, b, kill_at=kill_at, count=count):
                if count[0] == kill_at:
                    raise Killed
                count[0] += 1
                return real_replace(a, b)

            monkeypatch.setattr(outputs.os, "replace", dying_replace)
            try:
                recorder.on_epoch_end(epochs_before, _logs(epochs_before))
            except Killed:
                pass
            finally:
                monkeypatch.setattr(outputs.os, "replace", real_replace)

            folder = OutputFolder(out)
            state = folder.read_resume_state()
            done = state["epochs_done"] if state else 0
            shown = [r["epoch"] for r in folder.read_history()]
            assert done in (epochs_before, epochs_before + 1), (epochs_before, kill_at, done)
            # Every epoch the history shows is committed: a resume retrains none of them.
            assert shown == list(range(1, len(shown) + 1)) and len(shown) <= done, (epochs_before, kill_at, shown, done)


def test_a_resumed_run_starts_from_the_committed_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(cb, "plot_history", fake_plot)
    rows: list = []
    recorder = _recorder(tmp_path, rows)
    recorder.on_epoch_end(0, _logs(0))
    real_replace = os.replace
    calls = [0]

    def die_after_the_commit(a, b):
        real_replace(a, b)
        calls[0] += 1
        if calls[0] == 2:  # weights, then the state: epoch 2 is committed, its history not yet
            raise Killed

    monkeypatch.setattr(outputs.os, "replace", die_after_the_commit)
    with pytest.raises(Killed):
        recorder.on_epoch_end(1, _logs(1))
    monkeypatch.setattr(outputs.os, "replace", real_replace)
    folder = OutputFolder(tmp_path)
    state = folder.read_resume_state()
    assert state["epochs_done"] == 2
    assert [r["epoch"] for r in folder.read_history()] == [1]  # lags by the one epoch
    assert [r["epoch"] for r in folder.resume_rows(state)] == [1, 2]  # but the resume point has it


def test_temporary_files_a_kill_left_are_removed_and_results_are_not(tmp_path):
    (tmp_path / "resume").mkdir()
    stale = [
        tmp_path / ".history.tmp-k2j3h4.png",
        tmp_path / ".history.tmp-x.json",
        tmp_path / "resume" / ".epoch-0002.tmp-ab.weights.h5",
        tmp_path / ".envcheck-write-test-zz",
    ]
    kept = [
        tmp_path / "history.png",
        tmp_path / "history.json",
        tmp_path / "resume" / "epoch-0001.weights.h5",
        tmp_path / ".gitignore",
        tmp_path / "notes.tmp-1.txt",
    ]
    for path in stale + kept:
        path.write_bytes(b"")
    OutputFolder(tmp_path).remove_stale_temporaries()
    assert not [p for p in stale if p.exists()]
    assert all(p.exists() for p in kept)


def test_a_full_disk_while_committing_stops_the_run_and_keeps_the_last_epoch(tmp_path, monkeypatch):
    monkeypatch.setattr(cb, "plot_history", fake_plot)
    rows: list = []
    recorder = _recorder(tmp_path, rows)
    recorder.on_epoch_end(0, _logs(0))

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(FakeModel, "save_weights", full)
    recorder.on_epoch_end(1, _logs(1))  # no exception escapes into Keras
    assert recorder.model.stop_training and recorder.write_error.errno == 28
    assert [r["epoch"] for r in rows] == [1]
    assert OutputFolder(tmp_path).read_resume_state()["epochs_done"] == 1
    assert not [p.name for p in tmp_path.rglob(".*tmp*")]


def test_the_full_disk_message_is_one_line_saying_what_was_kept(tmp_path):
    from envcheck.train.config import TrainConfig
    from envcheck.train.trainer import _output_failure

    folder = OutputFolder(tmp_path)
    (tmp_path / "resume").mkdir()
    (tmp_path / "resume" / "epoch-0003.weights.h5").write_bytes(b"w")
    (tmp_path / "resume" / "state.json").write_text(
        json.dumps({"epochs_done": 3, "weights": "epoch-0003.weights.h5", "settings": {}})
    )
    error = _output_failure(
        TrainConfig(output=tmp_path),
        folder,
        OSError(28, "Can't synchronously write data (file write failed:\n errno = 28)"),
        "the epoch's outputs",
    )
    message = str(error)
    assert error.exit_code == 1 and "\n" not in message
    assert "No space left on device" in message and "Epochs 1-3 are kept" in message and "resume" in message
