"""Level 1: on every visible GPU (or the CPU), a matmul and a convolution, checked and timed.

Results are compared with a float64 computation on the CPU (numpy), to 1% of the largest value:
loose enough for TF32, which Ampere and newer GPUs use for float32 matmuls and convolutions by
default, and tight enough to catch a device that returns garbage, zeros, or another op's result.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from envcheck.machine import short_device
from envcheck.validation.checks import Check

TOLERANCE = 1e-2
REPEATS = 5


def conv2d_reference(images: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Stride 1, "SAME" padding, NHWC images and HWIO kernel, in float64 (im2col and one matmul)."""
    n, h, w, c = images.shape
    kh, kw, _, out = kernel.shape
    padded = np.pad(images.astype(np.float64), ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    patches = np.stack([padded[:, i : i + h, j : j + w, :] for i in range(kh) for j in range(kw)], axis=3)
    columns = patches.reshape(n * h * w, kh * kw * c)
    return (columns @ kernel.astype(np.float64).reshape(kh * kw * c, out)).reshape(n, h, w, out)


def relative_error(result: np.ndarray, reference: np.ndarray) -> float:
    """Largest difference, relative to the largest reference value."""
    if result.shape != reference.shape:
        return float("inf")
    scale = max(float(np.abs(reference).max()), 1e-12)
    return float(np.abs(result.astype(np.float64) - reference).max()) / scale


def _timed(op: Callable, inputs: tuple[np.ndarray, ...], device: str, repeats: int):
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    with tf.device(device):
        # Inputs copied to the device once, so the timing is the op and not the transfer.
        on_device = [tf.identity(tf.constant(x)) for x in inputs]
        first = op(*on_device)  # also the warm-up: kernels are chosen on the first call
        value = first.numpy()
        started = time.perf_counter()
        for _ in range(repeats):
            out = op(*on_device)
        out.numpy()  # waits for the device
    return first, value, (time.perf_counter() - started) / repeats


def check_op(
    name: str, device: str, op: Callable, inputs: tuple[np.ndarray, ...], reference: np.ndarray, flops: float
) -> Check:
    started = time.perf_counter()
    try:
        first, value, seconds = _timed(op, inputs, device, REPEATS)
    except Exception as exc:  # noqa: BLE001 - a failing op is the finding
        return Check(
            1,
            f"{name} on {short_device(device)}",
            False,
            f"failed: {type(exc).__name__}: {exc}".splitlines()[0],
            seconds=time.perf_counter() - started,
        )
    ran_on = short_device(first.device)
    error = relative_error(value, reference)
    gflops = flops / seconds / 1e9 if seconds > 0 else None
    figures = {
        "device": ran_on,
        "max_relative_error": error,
        "gflops": None if gflops is None else round(gflops, 1),
        "milliseconds": round(seconds * 1e3, 3),
    }
    wanted = short_device(device)
    if ran_on != wanted:
        return Check(
            1,
            f"{name} on {wanted}",
            False,
            f"asked for {wanted}, ran on {ran_on}",
            figures,
            time.perf_counter() - started,
        )
    if not error <= TOLERANCE:
        return Check(
            1,
            f"{name} on {wanted}",
            False,
            f"wrong result: largest difference {error:.2e} of the largest value (limit {TOLERANCE:g})",
            figures,
            time.perf_counter() - started,
        )
    return Check(
        1,
        f"{name} on {wanted}",
        True,
        f"max error {error:.1e}, {figures['milliseconds']:.2f} ms, {figures['gflops']:.1f} GFLOP/s",
        figures,
        time.perf_counter() - started,
    )


def run_level1(devices: list[str], *, matmul_size: int = 1024, conv_batch: int = 16) -> list[Check]:
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    import tensorflow as tf

    rng = np.random.default_rng(0)
    a = rng.standard_normal((matmul_size, matmul_size), dtype=np.float32)
    b = rng.standard_normal((matmul_size, matmul_size), dtype=np.float32)
    images = rng.standard_normal((conv_batch, 32, 32, 64), dtype=np.float32)
    kernel = rng.standard_normal((3, 3, 64, 64), dtype=np.float32)
    matmul_reference = a.astype(np.float64) @ b.astype(np.float64)
    conv_reference = conv2d_reference(images, kernel)
    matmul_flops = 2.0 * matmul_size**3
    conv_flops = 2.0 * conv_batch * 32 * 32 * 64 * 64 * 9

    checks = []
    for device in devices:
        checks.append(check_op("matmul", device, tf.linalg.matmul, (a, b), matmul_reference, matmul_flops))
        checks.append(
            check_op(
                "conv2d",
                device,
                lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME"),
                (images, kernel),
                conv_reference,
                conv_flops,
            )
        )
    return checks
