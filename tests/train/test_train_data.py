"""CIFAR-10 loaders: python batches, the Keras cache, image folders, archives; corrupt and missing data."""

from __future__ import annotations

import pickle
import tarfile

import numpy as np
import pytest
from train_helpers import (
    CLASSES,
    REAL_CIFAR10,
    random_images,
    write_image_folders,
    write_python_batch,
    write_python_batches,
)

from envcheck.train import image_folders
from envcheck.train.data import DataError, load_cifar10, synthetic_cifar10


@pytest.fixture(autouse=True)
def isolated_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    monkeypatch.setenv("ENVCHECK_CACHE_DIR", str(tmp_path / "cache"))


def test_python_batches_give_back_the_images_and_labels_written(tmp_path):
    x_train, y_train, x_test, y_test = write_python_batches(tmp_path / "cifar-10-batches-py")
    data = load_cifar10(tmp_path / "cifar-10-batches-py")
    assert data.kind == "python-batches"
    assert data.x_train.dtype == np.uint8 and data.x_train.shape == (60, 32, 32, 3)
    np.testing.assert_array_equal(data.x_train, x_train)  # channel planes back to height, width, channel
    np.testing.assert_array_equal(data.y_train, y_train)
    np.testing.assert_array_equal(data.x_test, x_test)
    np.testing.assert_array_equal(data.y_test, y_test)
    assert data.class_names == CLASSES


def test_subset_is_the_first_n_images_across_batch_files(tmp_path):
    x_train, y_train, x_test, _ = write_python_batches(tmp_path / "b", per_batch=12)
    data = load_cifar10(tmp_path / "b", subset=30, val_subset=4)
    np.testing.assert_array_equal(data.x_train, x_train[:30])
    np.testing.assert_array_equal(data.y_train, y_train[:30])
    np.testing.assert_array_equal(data.x_test, x_test[:4])


def test_subset_does_not_read_batch_files_it_does_not_need(tmp_path):
    write_python_batches(tmp_path / "b", per_batch=12)
    (tmp_path / "b" / "data_batch_5").write_bytes(b"not a pickle")
    assert len(load_cifar10(tmp_path / "b", subset=12).x_train) == 12
    with pytest.raises(DataError, match="data_batch_5"):
        load_cifar10(tmp_path / "b")


@pytest.mark.parametrize(
    "layout",
    [
        ("datasets", "cifar-10-batches-py-target", "cifar-10-batches-py"),  # Keras 3
        ("datasets", "cifar-10-batches-py"),  # Keras 2 / tf.keras
    ],
)
def test_keras_cache_is_found_in_both_layouts(tmp_path, layout):
    folder = tmp_path.joinpath("keras-home", *layout)
    x_train, *_ = write_python_batches(folder)
    data = load_cifar10(None)
    assert data.source == str(folder)
    np.testing.assert_array_equal(data.x_train, x_train)


def test_missing_data_says_where_it_looked_and_how_to_provide_it(tmp_path):
    with pytest.raises(DataError) as caught:
        load_cifar10(None)
    message = str(caught.value)
    assert "\n" not in message
    assert str(tmp_path / "keras-home" / "datasets" / "cifar-10-batches-py") in message
    assert "cifar-10-batches-py-target" in message
    assert "--data" in message and "--synthetic" in message and "never downloads" in message


def test_a_folder_without_cifar_layout_is_refused(tmp_path):
    (tmp_path / "photos").mkdir()
    with pytest.raises(DataError, match="neither CIFAR-10 python batches"):
        load_cifar10(tmp_path / "photos")


@pytest.mark.parametrize(
    "damage, expected",
    [
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "not a readable CIFAR-10 python batch"),
        (lambda p: p.unlink(), "missing"),
        (
            lambda p: p.write_bytes(
                pickle.dumps({b"data": np.zeros((4, 100), np.uint8), b"labels": [0] * 4}, protocol=4)
            ),
            "expected uint8 \\(N, 3072\\)",
        ),
        (lambda p: p.write_bytes(pickle.dumps([1, 2, 3], protocol=4)), "not a CIFAR-10 python batch"),
        # Labels that are not numbers used to escape as an internal error.
        (
            lambda p: p.write_bytes(
                pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": ["cat", "dog"]}, protocol=4)
            ),
            "labels are not whole numbers",
        ),
        (
            lambda p: p.write_bytes(
                pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [[0], [1]]}, protocol=4)
            ),
            "labels of shape",
        ),
    ],
)
def test_corrupt_python_batches_are_one_clear_error(tmp_path, damage, expected):
    write_python_batches(tmp_path / "b")
    damage(tmp_path / "b" / "test_batch")
    with pytest.raises(DataError, match=expected) as caught:
        load_cifar10(tmp_path / "b")
    assert "test_batch" in str(caught.value)


def test_labels_outside_the_ten_classes_are_refused(tmp_path):
    write_python_batches(tmp_path / "b")
    write_python_batch(tmp_path / "b" / "test_batch", random_images(2, 0), [3, 12])
    with pytest.raises(DataError, match="labels outside 0..9"):
        load_cifar10(tmp_path / "b")


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_batch_pickle_cannot_run_code(tmp_path):
    write_python_batches(tmp_path / "b")
    marker = tmp_path / "pwned"
    (tmp_path / "b" / "test_batch").write_bytes(pickle.dumps({b"data": _RunsCode(marker), b"labels": []}, protocol=4))
    with pytest.raises(DataError, match="refusing to load"):
        load_cifar10(tmp_path / "b")
    assert not marker.exists()


def test_image_folders_load_exact_pixels_with_class_ids_in_cifar_order(tmp_path):
    written = write_image_folders(tmp_path / "cifar", train_per_class=2, test_per_class=1)
    data = load_cifar10(tmp_path / "cifar")
    assert data.kind == "image-folders" and data.class_names == CLASSES
    assert data.x_train.shape == (20, 32, 32, 3) and data.x_test.shape == (10, 32, 32, 3)
    # Taken class by class in turn: image i of every class, then image i + 1.
    assert list(data.y_train) == list(range(10)) * 2
    np.testing.assert_array_equal(data.x_train[0], written[("train", "airplane", 0)])
    np.testing.assert_array_equal(data.x_train[13], written[("train", "cat", 1)])
    np.testing.assert_array_equal(data.x_test[9], written[("test", "truck", 0)])


def test_other_class_names_are_sorted_like_keras_does(tmp_path):
    write_image_folders(tmp_path / "d", 1, 1, classes=("zebra", "ant", "moth"))
    assert load_cifar10(tmp_path / "d").class_names == ("ant", "moth", "zebra")


def test_a_folder_subset_stays_balanced_and_reads_only_what_it_needs(tmp_path, monkeypatch):
    write_image_folders(tmp_path / "cifar", train_per_class=4, test_per_class=1)
    decoded = []
    real_decode = image_folders.decode_images
    monkeypatch.setattr(image_folders, "decode_images", lambda items: decoded.append(len(items)) or real_decode(items))
    data = load_cifar10(tmp_path / "cifar", subset=15)
    assert len(data.y_train) == 15
    assert np.bincount(data.y_train, minlength=10).tolist() == [2] * 5 + [1] * 5
    assert decoded[0] == 15  # 2 per class chosen, 15 of those decoded: not all 40


def test_decoded_images_are_cached_as_npz(tmp_path, monkeypatch):
    write_image_folders(tmp_path / "cifar", train_per_class=2, test_per_class=1)
    first = load_cifar10(tmp_path / "cifar")
    assert list((tmp_path / "cache" / "decoded").glob("*.npz"))

    def no_decoding(items):
        raise AssertionError("decoded again instead of reading the cache")

    monkeypatch.setattr(image_folders, "decode_images", no_decoding)
    second = load_cifar10(tmp_path / "cifar")
    np.testing.assert_array_equal(first.x_train, second.x_train)
    np.testing.assert_array_equal(first.y_test, second.y_test)


def test_a_changed_image_is_decoded_again(tmp_path):
    from PIL import Image

    write_image_folders(tmp_path / "cifar", train_per_class=1, test_per_class=1)
    load_cifar10(tmp_path / "cifar")
    new_pixels = np.full((32, 32, 3), 7, np.uint8)
    Image.fromarray(new_pixels).save(tmp_path / "cifar" / "train" / "bird" / "0000.png")
    np.testing.assert_array_equal(load_cifar10(tmp_path / "cifar").x_train[2], new_pixels)


def test_corrupt_and_wrong_sized_images_are_named(tmp_path):
    from PIL import Image

    write_image_folders(tmp_path / "cifar", 1, 1)
    broken = tmp_path / "cifar" / "train" / "dog" / "0000.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    with pytest.raises(DataError, match="cannot read image .*dog.*0000.png"):
        load_cifar10(tmp_path / "cifar")
    Image.fromarray(np.zeros((64, 48, 3), np.uint8)).save(broken)
    with pytest.raises(DataError, match="is 48x64; CIFAR-10 images are 32x32"):
        load_cifar10(tmp_path / "cifar")


def test_mismatched_class_folders_are_refused(tmp_path):
    write_image_folders(tmp_path / "cifar", 1, 1)
    (tmp_path / "cifar" / "test" / "unicorn").mkdir()
    with pytest.raises(DataError, match="differ"):
        load_cifar10(tmp_path / "cifar")


def _tar(source_dir, archive, arcname):
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source_dir, arcname=arcname)


def test_an_archive_of_image_folders_is_extracted_once_into_the_cache(tmp_path, monkeypatch):
    write_image_folders(tmp_path / "src", 1, 1, suffix=".jpg")
    _tar(tmp_path / "src", tmp_path / "cifar10-jpg.tar.gz", "cifar10")
    stages = []
    data = load_cifar10(tmp_path / "cifar10-jpg.tar.gz", stage=lambda doing, done=None: stages.append(doing))
    assert data.x_train.shape == (10, 32, 32, 3)
    assert data.source == str(tmp_path / "cifar10-jpg.tar.gz")  # what the user named, not the cache
    assert [p.name.startswith("cifar10-jpg-") for p in (tmp_path / "cache" / "datasets").iterdir()] == [True]
    # A first run says what takes its time: unpacking, then decoding each split.
    assert [s.split()[0] for s in stages] == ["Reading", "Unpacking", "Decoding", "Decoding"]

    monkeypatch.setattr(tarfile, "open", lambda *a, **k: (_ for _ in ()).throw(AssertionError("extracted again")))
    stages.clear()
    assert load_cifar10(
        tmp_path / "cifar10-jpg.tar.gz", stage=lambda doing, done=None: stages.append(doing)
    ).x_train.shape == (10, 32, 32, 3)
    assert [s.split()[0] for s in stages] == ["Reading"]  # the cache serves both the files and the arrays


def test_an_archive_of_python_batches_loads(tmp_path):
    x_train, *_ = write_python_batches(tmp_path / "cifar-10-batches-py")
    _tar(tmp_path / "cifar-10-batches-py", tmp_path / "cifar-10-python.tar.gz", "cifar-10-batches-py")
    np.testing.assert_array_equal(load_cifar10(tmp_path / "cifar-10-python.tar.gz").x_train, x_train)


def test_a_corrupt_archive_is_one_clear_error(tmp_path):
    archive = tmp_path / "cifar.tar.gz"
    archive.write_bytes(b"\x1f\x8b\x08\x00 not really gzip " * 20)
    with pytest.raises(DataError, match="not a readable .tar.gz"):
        load_cifar10(archive)
    assert not list((tmp_path / "cache" / "datasets").glob("cifar*"))  # nothing half-extracted left as complete


def test_synthetic_data_is_cifar_shaped_balanced_repeatable_and_learnable():
    data = synthetic_cifar10(200, 50, seed=3)
    assert data.x_train.shape == (200, 32, 32, 3) and data.x_train.dtype == np.uint8
    assert np.bincount(data.y_train).tolist() == [20] * 10
    np.testing.assert_array_equal(data.x_train, synthetic_cifar10(200, 50, seed=3).x_train)
    assert not np.array_equal(data.x_train, synthetic_cifar10(200, 50, seed=4).x_train)
    # Learnable: the nearest class mean (from the training images) classifies the test images.
    means = np.stack([data.x_train[data.y_train == k].astype(float).mean(0) for k in range(10)])
    distances = ((data.x_test[:, None].astype(float) - means[None]) ** 2).sum(axis=(2, 3, 4))
    assert (distances.argmin(1) == data.y_test).mean() > 0.9


@pytest.mark.skipif(
    not REAL_CIFAR10.exists(), reason="the real CIFAR-10 archive (../shared/data/cifar10-jpg.tar.gz) is absent"
)
def test_the_real_cifar10_archive_loads_a_balanced_slice(tmp_path, monkeypatch):
    monkeypatch.delenv("ENVCHECK_CACHE_DIR")  # the user cache: extracted once, reused by later runs
    data = load_cifar10(REAL_CIFAR10, subset=30, val_subset=20)
    assert data.kind == "image-folders" and data.class_names == CLASSES
    assert np.bincount(data.y_train).tolist() == [3] * 10 and np.bincount(data.y_test).tolist() == [2] * 10
    assert 60 < data.x_train.mean() < 200 and data.x_train.std() > 20  # real photographs, not blank files


def test_random_bytes_named_tar_gz_are_one_line(tmp_path):
    # tarfile's message lists every compression it tried, one per line: the error must stay one line.
    archive = tmp_path / "cifar.tar.gz"
    archive.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(DataError, match="not a readable .tar.gz") as caught:
        load_cifar10(archive)
    assert "\n" not in str(caught.value)
