"""CIFAR-10 as folders of images (train/<class>/*.jpg, test/<class>/*.jpg), or an archive of them.

Archives are extracted once into the envcheck cache. Only the images a run needs are decoded (the
first N of each class, in file-name order), with Pillow, and the decoded arrays are kept as .npz
in the cache, so the second run with the same selection reads one file instead of thousands.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import math
import os
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Optional

import numpy as np

from envcheck.fsutil import open_user_file, read_user_bytes
from envcheck.train.cifar import (
    CIFAR10_CLASSES,
    IMAGE_SHAPE,
    CifarData,
    DataError,
    find_test_folder,
)

ARCHIVE_FILE = "a .tar.gz/.tgz/.tar archive"
IMAGE_FILE = "an image"
MAX_IMAGE_BYTES = 1024 * 1024  # a 32x32 image is a few kilobytes in any of IMAGE_SUFFIXES' formats
# What an archive may unpack to: CIFAR-10's archives hold about 180 MB in 60,000 files.
MAX_EXTRACTED_BYTES = 4 * 1024**3
MAX_MEMBERS = 1_000_000
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".ppm"}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
_COMPLETE_MARKER = ".envcheck-extracted"

# Told what a long step is doing: stage("doing", done="done"), as envcheck.render.stages.Stages.
Stage = Callable[..., None]


def _silent(doing: str, done: Optional[str] = None) -> None:
    pass


def _shown(path: Path) -> str:
    """A folder as a person reads it: under the home folder as ~/..."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):
        return str(path)


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _sha256(path: Path) -> str:
    """The archive's content hash, streamed (no size cap needed), opened by the bounded reader:
    a FIFO or a device named as the archive is refused at once instead of read forever."""
    digest = hashlib.sha256()
    with open_user_file(path, ARCHIVE_FILE, DataError, label=f"--data {path}") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract_archive(archive: Path, cache: Path, stage: Optional[Stage] = None) -> Path:
    """Extract `archive` once into the cache (keyed by its content) and return the folder."""
    stage = stage or _silent
    try:
        size = archive.stat().st_size
    except OSError:
        size = 0
    stage(f"Reading {archive.name} ({size / 1e6:.0f} MB)")
    try:
        key = _sha256(archive)[:16]
    except OSError as exc:
        raise DataError(f"--data {archive}: cannot read it ({exc.strerror or exc})") from None
    stem = archive.name
    for suffix in ARCHIVE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    target = cache / "datasets" / f"{stem}-{key}"
    if (target / _COMPLETE_MARKER).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    stage(
        f"Unpacking {archive.name} into the cache (once; later runs reuse it)",
        done=f"Unpacked {archive.name} into {_shown(target.parent)} (later runs reuse it)",
    )
    # Extract beside the target and rename: an interrupted extraction never looks complete.
    staging = Path(tempfile.mkdtemp(prefix=f".{stem}-", dir=target.parent))
    try:
        with tarfile.open(archive) as tar:
            _extract_safely(tar, staging)
        (staging / _COMPLETE_MARKER).write_text(str(archive.name) + "\n")
        if target.exists():  # a half-finished earlier attempt without the marker
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(staging, target)
        except OSError:
            if not (target / _COMPLETE_MARKER).exists():  # not a concurrent extraction that won the race
                raise
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        # tarfile lists every compression it tried on lines of their own: one line is enough here.
        said = (str(exc).strip().splitlines() or [""])[0].rstrip(":")
        raise DataError(
            f"--data {archive}: not a readable .tar.gz/.tar archive ({type(exc).__name__}: {said})"
        ) from None
    except OSError as exc:
        raise DataError(f"--data {archive}: cannot extract it into {target.parent} ({exc.strerror or exc})") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _extract_safely(tar: tarfile.TarFile, destination: Path) -> None:
    _check_unpacked_size(tar)
    if hasattr(tarfile, "data_filter"):
        tar.extractall(destination, filter="data")
        return
    # Pythons without extraction filters: refuse links, devices and paths that leave the folder.
    root = destination.resolve()
    members = []
    for member in tar.getmembers():
        if not (member.isfile() or member.isdir()):
            continue
        if not (root / member.name).resolve().is_relative_to(root):
            raise tarfile.TarError(f"member {member.name!r} would be written outside the folder")
        members.append(member)
    tar.extractall(destination, members=members)


def _check_unpacked_size(tar: tarfile.TarFile) -> None:
    """Refuse an archive that would unpack to more than a data set of 32x32 images can be (a
    bomb of zeros compresses a thousandfold), before a byte is written."""
    total = members = 0
    for member in tar:
        members += 1
        total += max(0, member.size)
        if total > MAX_EXTRACTED_BYTES or members > MAX_MEMBERS:
            raise DataError(
                f"--data {tar.name}: would unpack to more than {MAX_EXTRACTED_BYTES >> 30} GiB or "
                f"{MAX_MEMBERS:,} files, far more than a data set of 32x32 images (CIFAR-10's archives hold "
                "about 180 MB in 60,000 files); refused before anything was written"
            )


def class_folders(split_dir: Path) -> list[str]:
    """The class folder names in label order: CIFAR-10's order when they are its classes, else sorted."""
    names = sorted(p.name for p in split_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    if set(names) == set(CIFAR10_CLASSES):
        return list(CIFAR10_CLASSES)
    return names


def choose_images(split_dir: Path, classes: list[str], limit: Optional[int]) -> list[tuple[Path, int]]:
    """The first `limit` images, taken class by class in turn so that a subset stays balanced."""
    per_class = None if limit is None else math.ceil(limit / max(1, len(classes)))
    columns = []
    for label, name in enumerate(classes):
        folder = split_dir / name
        files = (
            sorted((p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES), key=lambda p: p.name)
            if folder.is_dir()
            else []
        )
        columns.append([(p, label) for p in files[:per_class]])
    chosen = [item for row in _interleave(columns) for item in row]
    return chosen if limit is None else chosen[:limit]


def _interleave(columns: list[list[tuple[Path, int]]]):
    for i in range(max((len(c) for c in columns), default=0)):
        yield [c[i] for c in columns if i < len(c)]


def decode_images(items: list[tuple[Path, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Decode with Pillow to (N, 32, 32, 3) uint8 RGB; any unreadable or mis-sized image is an error."""
    from PIL import Image, UnidentifiedImageError  # only image folders need Pillow (about 0.1 s to import)

    images = np.empty((len(items), *IMAGE_SHAPE), dtype=np.uint8)
    labels = np.empty((len(items),), dtype=np.int64)
    for i, (path, label) in enumerate(items):
        # The bounded reader: a FIFO named like an image would block Pillow's open forever.
        raw = read_user_bytes(path, IMAGE_FILE, DataError, label=f"image {path}", max_bytes=MAX_IMAGE_BYTES)
        try:
            with Image.open(io.BytesIO(raw)) as image:
                pixels = np.asarray(image.convert("RGB"))
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
            raise DataError(f"cannot read image {path} ({type(exc).__name__}: {exc})") from None
        if pixels.shape != IMAGE_SHAPE:
            raise DataError(f"image {path} is {pixels.shape[1]}x{pixels.shape[0]}; CIFAR-10 images are 32x32")
        images[i] = pixels
        labels[i] = label
    return images, labels


def load_split(
    split_dir: Path, classes: list[str], limit: Optional[int], cache: Optional[Path], stage: Optional[Stage] = None
):
    items = choose_images(split_dir, classes, limit)
    if not items:
        raise DataError(f"{split_dir}: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in its class folders")
    cached = _cache_file(cache, split_dir, classes, items) if cache is not None else None
    if cached is not None and cached.exists():
        try:
            with np.load(cached) as stored:
                return stored["images"], stored["labels"]
        except (OSError, ValueError, KeyError, zlib.error):
            pass  # a damaged cache file is rebuilt below
    if stage is not None:
        stage(
            f"Decoding {len(items):,} images of {split_dir.name}/",
            done=f"Decoded {len(items):,} images of {split_dir.name}/ (cached for later runs)",
        )
    images, labels = decode_images(items)
    if cached is not None:
        _save_npz_atomically(cached, images=images, labels=labels)
    return images, labels


def _cache_file(cache: Path, split_dir: Path, classes: list[str], items) -> Path:
    digest = hashlib.sha256(f"{split_dir.resolve()}|{classes}".encode())
    for path, label in items:
        stat = path.stat()
        digest.update(f"{path.name}|{label}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return cache / "decoded" / f"{split_dir.name}-{len(items)}-{digest.hexdigest()[:20]}.npz"


def _save_npz_atomically(path: Path, **arrays: np.ndarray) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        handle, temp = tempfile.mkstemp(prefix=".decoded-", suffix=".npz", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(buffer.getvalue())
        os.replace(temp, path)
    except OSError:
        pass  # the cache is an optimisation: a read-only cache folder must not stop training


def load_image_folders(
    root: Path,
    *,
    subset: Optional[int] = None,
    val_subset: Optional[int] = None,
    cache: Optional[Path] = None,
    stage: Optional[Stage] = None,
) -> CifarData:
    train_dir, test_dir = root / "train", find_test_folder(root)
    if test_dir is None or not train_dir.is_dir():
        raise DataError(f"{root}: expected train/<class>/ and test/<class>/ image folders")
    classes = class_folders(train_dir)
    if not classes:
        raise DataError(f"{train_dir}: no class folders (expected one folder of images per class)")
    test_classes = class_folders(test_dir)
    if test_classes != classes:
        raise DataError(f"{test_dir}: class folders {test_classes} differ from {train_dir}'s {classes}")
    x_train, y_train = load_split(train_dir, classes, subset, cache, stage)
    x_test, y_test = load_split(test_dir, classes, val_subset, cache, stage)
    return CifarData(x_train, y_train, x_test, y_test, tuple(classes), str(root), "image-folders")
