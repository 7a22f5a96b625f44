"""--data files go through the bounded reader every user file goes through (no FIFO blocks, no
device or oversize file is read whole, no archive unpacks without bound), and an allocation that
fails is "out of memory" with a smaller batch to try (exit 1), not a bug in envcheck."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time

import numpy as np
import pytest
from train_helpers import write_image_folders, write_python_batches

from envcheck.errors import EXIT_FINDINGS
from envcheck.train import data as data_module
from envcheck.train import image_folders
from envcheck.train.cifar import DataError
from envcheck.train.config import PRESETS, TrainConfig
from envcheck.train.data import load_cifar10
from envcheck.train.trainer import OutOfMemory, is_out_of_memory, out_of_memory

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")


def _refused_at_once(call, match):
    started = time.monotonic()
    with pytest.raises(DataError, match=match) as caught:
        call()
    assert time.monotonic() - started < 30  # refused, not waited on (a blocked open never returns)
    assert "\n" not in str(caught.value)
    return caught.value


def test_a_fifo_in_place_of_a_python_batch_is_refused_not_waited_on(tmp_path):
    write_python_batches(tmp_path / "b")
    (tmp_path / "b" / "test_batch").unlink()
    os.mkfifo(tmp_path / "b" / "test_batch")
    error = _refused_at_once(lambda: load_cifar10(tmp_path / "b"), "is a pipe")
    assert "test_batch" in str(error)


def test_a_python_batch_past_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    write_python_batches(tmp_path / "b")
    big = tmp_path / "b" / "data_batch_1"
    with open(big, "r+b") as handle:
        handle.truncate(data_module.MAX_BATCH_BYTES + 1)  # sparse: no disk used, and never read
    error = _refused_at_once(lambda: load_cifar10(tmp_path / "b"), "more than 256 MiB")
    assert "data_batch_1" in str(error)


def test_a_python_batch_that_is_a_device_is_refused(tmp_path):
    write_python_batches(tmp_path / "b")
    (tmp_path / "b" / "test_batch").unlink()
    (tmp_path / "b" / "test_batch").symlink_to("/dev/zero")
    _refused_at_once(lambda: load_cifar10(tmp_path / "b"), "is a device")


def test_a_missing_batch_still_says_what_the_folder_should_hold(tmp_path):
    write_python_batches(tmp_path / "b")
    (tmp_path / "b" / "test_batch").unlink()
    _refused_at_once(lambda: load_cifar10(tmp_path / "b"), "test_batch: missing; a CIFAR-10 python batches folder")


def test_a_fifo_named_like_an_image_is_refused_not_waited_on(tmp_path):
    write_image_folders(tmp_path / "imgs", train_per_class=1, test_per_class=1)
    os.mkfifo(tmp_path / "imgs" / "train" / "cat" / "0000a.png")
    error = _refused_at_once(lambda: load_cifar10(tmp_path / "imgs"), "is a pipe")
    assert "0000a.png" in str(error)


def test_an_image_file_past_the_cap_is_refused(tmp_path):
    write_image_folders(tmp_path / "imgs", train_per_class=1, test_per_class=1)
    with open(tmp_path / "imgs" / "test" / "dog" / "0000.png", "r+b") as handle:
        handle.truncate(image_folders.MAX_IMAGE_BYTES + 1)
    _refused_at_once(lambda: load_cifar10(tmp_path / "imgs"), "more than 1 MiB")


def test_a_fifo_named_as_the_archive_is_refused_not_waited_on(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    os.mkfifo(tmp_path / "data.tar.gz")
    _refused_at_once(lambda: load_cifar10(tmp_path / "data.tar.gz"), "--data")
    (tmp_path / "link.tar.gz").symlink_to(tmp_path / "data.tar.gz")
    _refused_at_once(lambda: load_cifar10(tmp_path / "link.tar.gz"), "--data")


def test_an_archive_that_would_unpack_past_the_bound_is_refused_before_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))
    write_image_folders(tmp_path / "imgs", train_per_class=2, test_per_class=1)
    archive = tmp_path / "cifar.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "imgs", arcname="cifar")
    size = sum(m.size for m in tarfile.open(archive))
    monkeypatch.setattr(image_folders, "MAX_EXTRACTED_BYTES", size - 1)
    _refused_at_once(lambda: load_cifar10(archive), "would unpack to more than")
    assert not list((tmp_path / "cache" / "datasets").glob("cifar-*"))  # nothing left behind
    monkeypatch.setattr(image_folders, "MAX_EXTRACTED_BYTES", size)
    assert len(load_cifar10(archive).x_train) == 20  # at the bound: unpacked and loaded


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (MemoryError(), True),
        (RuntimeError("OOM when allocating tensor with shape[64,96,32,32] and type float"), True),
        (RuntimeError("failed to allocate memory: std::bad_alloc"), True),
        (OSError(12, "Cannot allocate memory"), True),
        (RuntimeError("Graph execution error: incompatible shapes"), False),
        (ValueError("out of range"), False),
    ],
)
def test_what_counts_as_running_out_of_memory(error, expected):
    assert is_out_of_memory(error) is expected


def test_tensorflows_resource_exhausted_counts_as_out_of_memory():
    tf = pytest.importorskip("tensorflow")
    assert is_out_of_memory(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"))


def test_out_of_memory_is_one_line_with_a_smaller_batch_to_try(tmp_path):
    config = TrainConfig(output=tmp_path, recipe=PRESETS["post"])
    error = out_of_memory(config, MemoryError("Unable to allocate 1.15 GiB for an array\nwith shape (50000, 32)"))
    assert isinstance(error, OutOfMemory) and error.exit_code == EXIT_FINDINGS
    assert "\n" not in str(error) and str(error).startswith("out of memory (MemoryError: Unable to allocate 1.15 GiB")
    assert "try --batch-per-replica 32" in str(error)
    single = TrainConfig(output=tmp_path, recipe=PRESETS["post"].with_overrides(batch_per_replica=1))
    assert "fewer images (--subset)" in str(out_of_memory(single, MemoryError()))


def test_an_allocation_that_fails_during_the_run_is_exit_1_not_a_bug(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))

    def no_memory(*args, **kwargs):
        np.zeros(1)  # the real allocator is fine; this is what numpy raises when it is not
        raise MemoryError(
            "Unable to allocate 1.15 GiB for an array with shape (50000, 32, 32, 3) and data type float64"
        )

    monkeypatch.setattr("envcheck.train.trainer.load_data", no_memory)
    result = cli("train", "--synthetic", "--no-progress", "--output", str(tmp_path / "run"))
    assert result.code == EXIT_FINDINGS, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("envcheck: error: out of memory (MemoryError: Unable to allocate")
    assert "--batch-per-replica 32" in lines[0] and "bug in envcheck" not in result.err


def test_an_address_space_limit_tensorflow_would_abort_under_is_one_line_before_it_starts(tmp_path, train_env):
    resource = pytest.importorskip("resource")
    limit = 3 * 1024**3  # the 3 GB cap under which TensorFlow aborted (pthread_create, std::bad_alloc)
    done = subprocess.run(
        [sys.executable, "-m", "envcheck", "train", "--synthetic", "--no-progress", "--output", str(tmp_path / "run")],
        env=train_env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )
    assert done.returncode == EXIT_FINDINGS, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "out of memory: the address-space limit (ulimit -v, prlimit --as) is 3.0 GiB" in lines[0]
    assert "--batch-per-replica 32" in lines[0] and "bug in envcheck" not in done.stderr


def test_no_address_space_limit_or_a_large_one_is_not_refused(tmp_path):
    from envcheck.train.trainer import ADDRESS_SPACE_FLOOR, check_address_space

    config = TrainConfig(output=tmp_path)
    check_address_space(config)  # this process: no limit set (or a large one)
    check_address_space(config, ADDRESS_SPACE_FLOOR)
    with pytest.raises(OutOfMemory, match="is 2.0 GiB"):
        check_address_space(config, 2 * 1024**3)
