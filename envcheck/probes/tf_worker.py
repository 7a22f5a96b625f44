"""TensorFlow as the probed interpreter sees it: run there as a standalone script, in its own process.

Imports only the standard library, TensorFlow and numpy (which TensorFlow brings), and runs on
Python 3.6 and later with TensorFlow 1.x (graph mode) or 2.x (``vermin`` checks the syntax in the
tests). TensorFlow and
its C++ logging print freely, so the result goes to stdout after a marker line, as one JSON
object; a partial result is printed after the cheap stages, so a crash during the placement test
still leaves the version, the build and the devices behind.
"""

import importlib.util
import json
import os
import sys
import time

MARKER = "@@envcheck-tf-worker-result@@"

# Libraries worth naming when they are mapped into the process after TensorFlow initialised.
MAPPED_LIBRARY_NAMES = (
    "libcuda.so",
    "libcudart",
    "libcudnn",
    "libcublas",
    "libcufft",
    "libcurand",
    "libcusolver",
    "libcusparse",
    "libnvJitLink",
    "libnccl",
    "libnvrtc",
    "libcupti",
    "libnvidia-ml",
    "libnvinfer",
    "libnvidia-ptxjitcompiler",
)


def _drop_own_directory():
    """This file sits next to envcheck's own ``tensorflow.py``; ``import tensorflow`` must not find it."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]


def emit(result):
    sys.stdout.write("\n" + MARKER + "\n" + json.dumps(result, default=str) + "\n")
    sys.stdout.flush()


def _error(exc):
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:4000] if text else type(exc).__name__


def _fail(result, stage, exc):
    if "failed_stage" not in result:
        result["failed_stage"] = stage
        result["error"] = _error(exc)


def run(result):
    result["stage"] = "find"
    if importlib.util.find_spec("tensorflow") is None:
        result["not_installed"] = True
        return
    result["stage"] = "import"
    emit(dict(result, partial=True))  # a crash inside the import is then known to be one
    started = time.perf_counter()
    try:
        # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
        import tensorflow as tf
    except BaseException as exc:  # noqa: BLE001 - ImportError, DLL load failures, SystemExit, ...
        result["import_seconds"] = round(time.perf_counter() - started, 3)
        _fail(result, "import", exc)
        return
    result["import_seconds"] = round(time.perf_counter() - started, 3)
    version = getattr(getattr(tf, "version", None), "VERSION", None) or getattr(tf, "__version__", None)
    result["version"] = str(version) if version else None
    location = os.path.dirname(os.path.abspath(getattr(tf, "__file__", "") or ""))
    result["location"] = location
    result["distributions"] = providing_distributions(location)
    try:
        # Only takes effect before the runtime initialises, which listing logical devices does.
        tf.debugging.set_log_device_placement(True)
    except Exception:  # noqa: BLE001 - the placement test still reads each result's device
        pass
    for stage, step in (("build_info", build_info), ("devices", devices)):
        result["stage"] = stage
        try:
            result.update(step(tf))
        except Exception as exc:  # noqa: BLE001
            _fail(result, stage, exc)
    result["stage"] = "placement"
    emit(dict(result, partial=True))
    try:
        result["placement"] = placement_test(tf, result.get("logical_devices", []))
    except Exception as exc:  # noqa: BLE001
        _fail(result, "placement", exc)
    result["stage"] = "done"
    result["mapped_libraries"] = mapped_libraries()


def providing_distributions(location):
    """Installed distributions that ship the ``tensorflow`` package; the imported one first."""
    try:
        from importlib import metadata  # novm - only where it exists
    except ImportError:  # Python < 3.8
        return []
    found = []
    for dist in metadata.distributions():
        try:
            name = (dist.metadata["Name"] or "").strip()
        except Exception:  # noqa: BLE001 - broken METADATA
            continue
        lowered = name.lower().replace("_", "-")
        if not lowered.startswith(("tensorflow", "tf-nightly", "intel-tensorflow")):
            continue
        try:
            top = dist.read_text("top_level.txt")
            if top is not None:
                ships = "tensorflow" in top.split()
            else:
                ships = any(str(f).replace("\\", "/") == "tensorflow/__init__.py" for f in (dist.files or ()))
        except Exception:  # noqa: BLE001
            continue
        if not ships:
            continue
        try:
            here = os.path.dirname(os.path.abspath(str(dist.locate_file("tensorflow/__init__.py"))))
        except Exception:  # noqa: BLE001
            here = ""
        found.append((here != location, lowered))
    return [name for _, name in sorted(found)]


def build_info(tf):
    info = {}
    getter = getattr(getattr(tf, "sysconfig", None), "get_build_info", None)
    if getter is not None:
        info = dict(getter())
    elif hasattr(tf, "test"):
        info = {"is_cuda_build": bool(tf.test.is_built_with_cuda())}
    out = {
        "is_cuda_build": info.pop("is_cuda_build", None),
        "is_rocm_build": info.pop("is_rocm_build", None),
        "cuda_version": _text(info.pop("cuda_version", None)),
        "cudnn_version": _text(info.pop("cudnn_version", None)),
        "compute_capabilities": [str(c) for c in info.pop("cuda_compute_capabilities", None) or ()],
        "build_info": {str(k): _text(v) for k, v in info.items()},
    }
    return out


def _text(value):
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def devices(tf):
    config = getattr(tf, "config", None)
    if config is None or not hasattr(getattr(config, "experimental", None) or config, "list_physical_devices"):
        return _devices_tf1(tf)
    config = tf.config
    list_physical = getattr(config, "list_physical_devices", None) or config.experimental.list_physical_devices
    list_logical = getattr(config, "list_logical_devices", None) or config.experimental.list_logical_devices
    gpus = list_physical("GPU")
    for gpu in gpus:
        # The doctor must not take every byte of a shared GPU for two small ops.
        try:
            config.experimental.set_memory_growth(gpu, True)
        except Exception:  # noqa: BLE001 - already initialised, or a virtual device setup
            pass
    physical = []
    for device in list_physical():
        details = {}
        if device.device_type == "GPU":
            try:
                raw = config.experimental.get_device_details(device)
                details = {
                    str(k): ".".join(str(p) for p in v) if isinstance(v, tuple) else str(v) for k, v in raw.items()
                }
            except Exception as exc:  # noqa: BLE001 - TF before 2.3 has no device details
                details = {"error": _error(exc)}
        physical.append({"name": device.name, "device_type": device.device_type, "details": details})
    logical = [{"name": d.name, "device_type": d.device_type} for d in list_logical()]
    return {"physical_devices": physical, "logical_devices": logical}


def placement_test(tf, logical):
    """A matmul and a 2-D convolution on every visible GPU (the CPU when there is none)."""
    # lazy for start-up: numpy is heavy (or absent), imported only where it is used
    import numpy as np

    targets = [d["name"] for d in logical if d.get("device_type") == "GPU"] or ["/device:CPU:0"]
    rng = np.random.RandomState(0)
    # Small integers keep every product and sum exact even under TF32 matmuls.
    a = rng.randint(-3, 4, size=(64, 64)).astype(np.float32)
    b = rng.randint(-3, 4, size=(64, 64)).astype(np.float32)
    image = rng.randint(-3, 4, size=(1, 16, 16, 4)).astype(np.float32)
    kernel = rng.randint(-2, 3, size=(3, 3, 4, 8)).astype(np.float32)
    expected_matmul = a.astype(np.float64) @ b.astype(np.float64)
    expected_conv = conv2d_reference(image, kernel)
    results = []
    for target in targets:
        short = "/" + target.split("device:")[-1]
        results.append(
            _run_op(
                tf,
                np,
                short,
                target,
                "matmul",
                lambda: tf.linalg.matmul(tf.constant(a), tf.constant(b)),
                expected_matmul,
            )
        )
        results.append(
            _run_op(
                tf,
                np,
                short,
                target,
                "conv2d",
                lambda: tf.nn.conv2d(tf.constant(image), tf.constant(kernel), strides=[1, 1, 1, 1], padding="SAME"),
                expected_conv,
            )
        )
    return results


def _run_op(tf, np, requested, target, op, build, expected):
    started = time.perf_counter()
    try:
        with tf.device(target):
            out = build()
        value = _value(tf, out)  # waits for the device, so the time includes it
        seconds = time.perf_counter() - started
        scale = max(1.0, float(np.abs(expected).max()))
        ok = value.shape == expected.shape and float(np.abs(value - expected).max()) <= 1e-3 * scale
        return {
            "op": op,
            "requested": requested,
            "device": out.device,
            "ok": ok,
            "error": None if ok else f"wrong result: largest difference {float(np.abs(value - expected).max()):.3g}",
            "seconds": round(seconds, 4),
        }
    except Exception as exc:  # noqa: BLE001 - the failing op is the fact
        return {
            "op": op,
            "requested": requested,
            "device": None,
            "ok": False,
            "error": _error(exc),
            "seconds": round(time.perf_counter() - started, 4),
        }


def _value(tf, tensor):
    """The tensor's value: eagerly (TF 2) or in a session (TF 1's graph mode)."""
    if hasattr(tensor, "numpy"):
        try:
            return tensor.numpy()
        except Exception:  # noqa: BLE001 - a graph tensor under TF 2's compat mode
            pass
    session_cls = getattr(tf, "Session", None) or tf.compat.v1.Session
    config_cls = getattr(tf, "ConfigProto", None) or tf.compat.v1.ConfigProto
    with session_cls(config=config_cls(allow_soft_placement=True, log_device_placement=True)) as session:
        return session.run(tensor)


def conv2d_reference(image, kernel):
    """SAME-padded stride-1 NHWC convolution in float64, as TensorFlow defines it."""
    # lazy for start-up: numpy is heavy (or absent), imported only where it is used
    import numpy as np

    n, h, w, _ = image.shape
    kh, kw, _, out_channels = kernel.shape
    top, left = (kh - 1) // 2, (kw - 1) // 2
    padded = np.pad(image.astype(np.float64), ((0, 0), (top, kh - 1 - top), (left, kw - 1 - left), (0, 0)))
    out = np.zeros((n, h, w, out_channels))
    for dy in range(kh):
        for dx in range(kw):
            out += padded[:, dy : dy + h, dx : dx + w, :] @ kernel[dy, dx].astype(np.float64)
    return out


def mapped_libraries():
    """CUDA libraries this process has mapped (Linux): the copies TensorFlow actually loaded."""
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                base = os.path.basename(path)
                if any(base.startswith(name) for name in MAPPED_LIBRARY_NAMES) and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def _devices_tf1(tf):
    """TensorFlow 1.x before tf.config: the local devices as the session sees them."""
    # lazy for start-up: tensorflow is heavy (or absent), imported only where it is used
    from tensorflow.python.client import device_lib

    found = device_lib.list_local_devices()
    physical = []
    for d in found:
        kind = str(d.device_type)
        details = {}
        description = getattr(d, "physical_device_desc", "") or ""
        for part in description.split(","):
            key, _, value = part.partition(":")
            if key.strip() in ("name", "compute capability"):
                details["device_name" if key.strip() == "name" else "compute_capability"] = value.strip()
        index = str(d.name).rsplit(":", 1)[-1]
        physical.append({"name": "/physical_device:%s:%s" % (kind, index), "device_type": kind, "details": details})
    logical = [
        {"name": "/device:%s:%s" % (d["device_type"], d["name"].rsplit(":", 1)[-1]), "device_type": d["device_type"]}
        for d in physical
    ]
    return {"physical_devices": physical, "logical_devices": logical}


def main():
    _drop_own_directory()
    result = {}
    try:
        run(result)
    except BaseException as exc:  # noqa: BLE001 - whatever happens, the parent gets a result
        _fail(result, result.get("stage") or "worker", exc)
    emit(result)
    sys.stderr.flush()
    _flush_c_streams()
    # Skip interpreter teardown: some CUDA setups crash while unloading, after the answer is known.
    os._exit(0)


def _flush_c_streams():
    """TensorFlow prints device placement through C stdio; os._exit would drop what is buffered."""
    try:
        # lazy and guarded: importing ctypes can fail on some systems, and the try handles it
        import ctypes

        libc = ctypes.CDLL(None) if os.name == "posix" else ctypes.cdll.msvcrt
        libc.fflush(None)
    except Exception:  # noqa: BLE001 - losing placement lines loses detail, not the result
        pass


if __name__ == "__main__":
    main()
