"""A status code or a library name is read only inside its own library's frame: the CUDA stack's
file or call names, or a TensorFlow/XLA/PyTorch frame. Lines of other software that share a word
with a CUDA message (a Python ValueError about labels, a shape mismatch, Mesa's "failed to load
driver", a game's DLL, an unsigned driver, Keras' "Invalid argument" about indices, a licence
server's "error code 126") get no explanation at all, and their parts carry no loader reason, no
Windows code and no status.

The lines are written here from each program's own message format (named beside each), not
taken from any thread."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.parts import in_stack_frame, read_parts

CATALOGUE = load_patterns()

NOT_THE_CUDA_STACK = [
    # Keras' SparseCategoricalCrossentropy label check (tensorflow/python/ops/nn_ops.py, a ValueError)
    "ValueError: Received a label value of 10 which is outside the valid range of [0, 10).  Label values: 3 10 2",
    # ResourceGather's bounds check (tensorflow/core/kernels/gather_functor.h): a code error, not the GPU
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: indices[5,3] = 10000 is not in [0, 10000) [Op:ResourceGather]",
    "InvalidArgumentError: Graph execution error: indices[12,0] = -1 is not in [0, 5000)",
    # Keras' shape check (keras/src/losses)
    "ValueError: Shapes (None, 1) and (None, 10) are incompatible",
    # Mesa's loader (src/loader/loader.c, src/glx/dri_common.c)
    "libGL error: failed to load driver: swrast",
    "libGL error: MESA-LOADER: failed to open iris: /usr/lib/dri/iris_dri.so: cannot open shared object file: No such file or directory (search paths /usr/lib/x86_64-linux-gnu/dri)",
    # Windows' loader dialog for a program's missing DLL (a game's DirectX and Visual C++ runtime)
    "The code execution cannot proceed because d3dx9_43.dll was not found. Reinstalling the program may fix this problem.",
    "The program can't start because MSVCP140.dll is missing from your computer. Try reinstalling the program to fix this problem.",
    # Python's ctypes loading a game's DLL (Lib/ctypes/__init__.py, WinError 126 and 193)
    'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\Games\\Foo\\bin\\fmod.dll" or one of its dependencies.',
    "OSError: [WinError 193] %1 is not a valid Win32 application",
    "FileNotFoundError: Could not find module 'C:\\Program Files (x86)\\Foo Game\\steam_api64.dll' (or one of its dependencies). Try using the full path with constructor syntax.",
    # Windows' OpenGL ICD loader on a hybrid-graphics laptop (no file named)
    "LoadLibrary failed with error 126: The specified module could not be found.",
    # Python's own extension modules (PC/layout of CPython's Windows build)
    "ImportError: DLL load failed while importing _ssl: The specified module could not be found.",
    # the kernel's module signature check (kernel/module/signing.c) and Device Manager's code 52
    "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
    "Windows cannot verify the digital signature for the drivers required for this device. (Code 52)",
    # other programs' own words that share one with a CUDA status
    "Upload failed. Status: invalid argument",
    "Login failed. Status: unknown error",
    "error: unknown error (code 35) while contacting update server",
    "error code 126 from the license server",
    "MemoryError: Unable to allocate 3.00 GiB for an array with shape (20000, 20000) and data type float64",
    "Error: out of memory while reading the PNG file",
    # ld.so for system programs (elf/dl-load.c, elf/dl-version.c, elf/dl-lookup.c)
    "/usr/bin/foo: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /usr/bin/foo)",
    "/usr/bin/gimp: symbol lookup error: /usr/lib/libbabl-0.1.so.0: undefined symbol: babl_trc_new",
    "dyld[123]: Library not loaded: /opt/homebrew/opt/icu4c/lib/libicuio.73.dylib",
    "vkCreateInstance failed with error code -9 (VK_ERROR_INCOMPATIBLE_DRIVER)",
]


@pytest.mark.parametrize("line", NOT_THE_CUDA_STACK)
def test_other_software_gets_no_explanation(line):
    result = CATALOGUE.scan_text(line)
    assert result.ids == [], result.ids


@pytest.mark.parametrize("line", NOT_THE_CUDA_STACK)
def test_other_software_leaves_no_loader_reason_code_or_status_in_the_parts(line):
    parts = read_parts(line)
    if not in_stack_frame(line):
        assert "windows_code" not in parts or "WinError" in line or "LoadLibrary" in line
    assert "status_name" not in parts
    if "cannot open shared object file" not in line and "not found (required by" not in line:
        assert "dlerror_reason" not in parts or "Library not loaded" in line or "undefined symbol" in line


# The same shapes inside the CUDA stack's frame are explained, with their parts.
IN_THE_FRAME = [
    (
        'OSError: [WinError 126] The specified module could not be found. Error loading "C:\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.',
        "windows-dll-load-error",
        {"windows_code": "126"},
    ),
    (
        # tensorflow/core/common_runtime/gpu/gpu_device.cc: the runtime call, then cudaGetErrorString's text
        "cudaGetDevice() failed. Status: CUDA driver version is insufficient for CUDA runtime version",
        "cuda-driver-too-old",
        {},
    ),
    (
        # TensorFlow's Windows loader (tsl/platform/windows/load_library.cc) prints the DLL and the code
        "Could not load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found",
        "cudnn-not-loaded",
        {"dlerror_reason": "not-found"},
    ),
    (
        "ImportError: /home/u/.venv/lib/python3.11/site-packages/jaxlib/xla_extension.so: undefined symbol: _ZN3xla8PjRtDevice",
        "loader-undefined-symbol",
        {"dlerror_reason": "undefined-symbol"},
    ),
]


@pytest.mark.parametrize("line, pattern_id, parts", IN_THE_FRAME)
def test_the_same_shapes_in_the_stack_frame_are_explained(line, pattern_id, parts):
    result = CATALOGUE.scan_text(line)
    assert pattern_id in result.ids
    (explanation,) = [e for e in explain(result) if e.id == pattern_id]
    for name, value in parts.items():
        assert explanation.variables[name] == value


@pytest.mark.parametrize(
    "line, expected",
    [
        ("LoadLibrary failed with error 126", False),  # "dLib" inside a word is no framework
        ("libGL error: failed to load driver: swrast", False),
        ("/usr/lib/x86_64-linux-gnu/libcudnn_ops_infer.so.8", True),
        ("ImportError: DLL load failed while importing _pywrap_tensorflow_internal", True),
        ("C:\\venv\\Lib\\site-packages\\foo\\bar.pyd", True),
        ("E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit", True),
    ],
)
def test_stack_frame(line, expected):
    assert in_stack_frame(line) is expected


def test_windows_code_needs_the_loaders_frame():
    assert "windows_code" not in read_parts("error code 126 from the license server")
    assert read_parts("Could not load 'cudnn64_8.dll'. Error code 126")["windows_code"] == "126"
    assert read_parts("LoadLibraryExW failed with error 193")["windows_code"] == "193"


def test_not_found_is_a_loader_reason_only_in_the_loaders_frame():
    assert "dlerror_reason" not in read_parts("nccl is not found in the test matrix, skipping")
    # cuDNN 8's own loader message ("Could not load library X. Error: ...") is a loader's frame
    assert "dlerror_reason" in read_parts(
        "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: not found"
    )
    assert (
        read_parts("libcudart.so.11.0: cannot open shared object file: No such file or directory")["dlerror_reason"]
        == "not-found"
    )


def test_a_bare_loader_line_is_explained_when_the_input_shows_the_stack():
    # Python's traceback through TensorFlow, then ctypes' bare WinError (Lib/ctypes/__init__.py)
    log = (
        'File "C:\\venv\\Lib\\site-packages\\tensorflow\\python\\platform\\self_check.py", line 50\n'
        "OSError: [WinError 126] The specified module could not be found\n"
    )
    assert "windows-dll-load-error" in CATALOGUE.scan_text(log).ids
    # the same line alone, or in a game's log, is another program's
    assert CATALOGUE.scan_text("OSError: [WinError 126] The specified module could not be found").ids == []
    game = "Loading level 3\nOSError: [WinError 126] The specified module could not be found\n"
    assert CATALOGUE.scan_text(game).ids == []


# An installed Python package is in the frame where a line is one of its frames (CPython's
# traceback module, IPython's ultratb) or names one of its library files; the word "site-packages"
# elsewhere (pip's output, a warning's location as warnings.formatwarning prints it) is no frame.
@pytest.mark.parametrize(
    "line, expected",
    [
        # Lib/traceback.py: '  File "<path>", line <n>, in <name>'
        ('  File "/home/u/.venv/lib/python3.10/site-packages/cv2/__init__.py", line 8, in <module>', True),
        ('  File "C:\\Users\\Jo Doe\\venv\\Lib\\site-packages\\foo\\__init__.py", line 12, in <module>', True),
        # IPython 8 and newer, then IPython 7 and older (IPython/core/ultratb.py)
        ("File ~/venv/lib/python3.10/site-packages/foo/bar.py:153, in load(path)", True),
        (
            "~/venv/lib/python3.6/site-packages/pandas/core/indexes/base.py in get_loc(self, key, method, tolerance)",
            True,
        ),
        # a package's own extension module or shared library, as the loader names it
        ("/usr/local/lib/python3.8/dist-packages/foo/_bar.cpython-38-x86_64-linux-gnu.so", True),
        # pip's and a warning's words, with the same folders
        ("Requirement already satisfied: numpy in /usr/lib/python3/dist-packages (1.21.5)", False),
        ("Defaulting to user installation because normal site-packages is not writeable", False),
        (
            "/usr/local/lib/python3.12/dist-packages/foo/default.py:30: UserWarning: pkg_resources is deprecated as an API.",
            False,
        ),
        ("  /home/u/.venv/lib/python3.6/site-packages/_pytest/mark/structures.py:337: PytestUnknownMarkWarning", False),
        # XLA's names, and words that only begin with its letters
        ("XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda", True),
        ("ImportError: /venv/lib/python3.11/site-packages/jaxlib/xla_extension.so: undefined symbol: foo", True),
        ("    plt.xlabel('epoch')", False),
        ("Creating training job on ml.g4dn.xlarge", False),
    ],
)
def test_a_python_package_is_in_the_frame_only_as_a_frame_or_a_library_file(line, expected):
    assert in_stack_frame(line) is expected


# Another program's loader or crash message next to a pip line or a warning's location is that
# program's; next to a traceback frame through an installed package it is the package's.
OTHER_PROGRAM = [
    (
        "Requirement already satisfied: numpy in /usr/lib/python3/dist-packages (1.21.5)",
        "/usr/bin/gimp: symbol lookup error: /usr/lib/libbabl-0.1.so.0: undefined symbol: babl_trc_new",
    ),
    (
        "Defaulting to user installation because normal site-packages is not writeable",
        "/usr/bin/foo: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /usr/bin/foo)",
    ),
    (
        "  /home/u/.venv/lib/python3.10/site-packages/_pytest/mark/structures.py:337: PytestUnknownMarkWarning: Unknown pytest.mark.slow - is this a typo?",
        "Segmentation fault (core dumped)",
    ),
]


@pytest.mark.parametrize("context, line", OTHER_PROGRAM)
def test_a_pip_line_or_a_warning_location_does_not_frame_another_programs_error(context, line):
    assert CATALOGUE.scan_text(f"{context}\n{line}\n").ids == []


@pytest.mark.parametrize(
    "frame",
    [
        '  File "C:\\venv\\Lib\\site-packages\\foo\\__init__.py", line 12, in <module>',
        "~\\venv\\lib\\site-packages\\foo\\__init__.py in <module>()",
    ],
)
def test_a_traceback_frame_through_an_installed_package_frames_the_loaders_error(frame):
    log = f"{frame}\nOSError: [WinError 126] The specified module could not be found\n"
    assert "windows-dll-load-error" in CATALOGUE.scan_text(log).ids


# CUDA's own files and modules are in the frame as files are named (libcuda.so, cuda.h,
# TensorFlow's cuda_*.cc and stream_executor/cuda/, the toolkit's folders, CUDA_* variables); the
# word "CUDA" in another program's sentence, its device names or its own cuda.c are not.
@pytest.mark.parametrize(
    "line, expected",
    [
        ("libcuda.so.1: cannot open shared object file: No such file or directory", True),
        ("#include <cuda.h>", True),
        ("W tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit", True),
        ("export LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64", True),
        ("CUDA_VISIBLE_DEVICES=0 python train.py", True),
        ("CUDA error in func 'init' at line 245 : out of memory.", False),  # a miner's CUDA_SAFE_CALL
        ("cu 19:58:37 cuda-3   Generating DAG + Light : 2.07 GB", False),
        ("cu  18:11:24|CUDA0     Using device: GeForce GTX 780 Ti  (Compute 3.5)", False),
        ("prog: ./src/cuda.c:36: check_error: Assertion `0' failed.", False),  # glibc's assert, a program's file
        ("I installed CUDA and it still fails", False),
    ],
)
def test_cuda_is_in_the_frame_as_a_file_or_module_not_as_a_word(line, expected):
    assert in_stack_frame(line) is expected


def test_a_crash_after_another_programs_cuda_lines_is_that_programs():
    # a CUDA miner's log (its CUDA_SAFE_CALL format: "CUDA error in func '%s' at line %d : %s."), then
    # bash's report of the crash: nothing in it is a file or module of the CUDA stack
    log = (
        "cu  10:00:01|CUDA0     Using device: GeForce GTX 1080  (Compute 6.1)\n"
        "CUDA error in func 'init' at line 245 : out of memory.\n"
        "./start.sh: line 1: 10952 Segmentation fault      (core dumped) ./miner -U\n"
    )
    assert CATALOGUE.scan_text(log).ids == []
    # the same report after TensorFlow's CUDA lines is the stack's crash
    ours = (
        "2024-01-01 10:00:00.000000: I tensorflow/stream_executor/cuda/cuda_gpu_executor.cc:939] "
        "successful NUMA node read from SysFS had negative value (-1)\n"
        "Segmentation fault (core dumped)\n"
    )
    assert "process-crash-status" in CATALOGUE.scan_text(ours).ids


# FFmpeg's log lines carry their context, libavutil/log.c's "[%s @ %p] " (the component and its
# address, %p as glibc prints it and as Windows' C runtime does): FFmpeg's own messages about its
# encoders and decoders, whatever CUDA status or library they name, are not the stack's.
FFMPEG = [
    "[h264_nvenc @ 0x55d020323ac0] dl_fn->cuda_dl->cuCtxCreate(&ctx->cu_context_internal, 0, cu_device) "
    "failed -> CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    "[AVHWDeviceContext @ 0x55bf99883d00] cu->cuInit(0) failed -> CUDA_ERROR_UNKNOWN: unknown error",
    "[AVHWDeviceContext @ 000002937d4c2d40] cu->cuInit(0) failed -> CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
    "[vost#0:0/h264_nvenc @ 0x590964d2d040] Error while opening encoder - maybe incorrect parameters such as bit_rate",
]


@pytest.mark.parametrize("line", FFMPEG)
def test_ffmpegs_own_lines_are_not_explained(line):
    assert CATALOGUE.scan_text(line).ids == []
    assert CATALOGUE.scan_text(f"[2022-10-20 16:24:05] ffmpeg.cam.detect  ERROR   : {line}").ids == []


def test_the_same_status_without_ffmpegs_context_is_explained():
    assert CATALOGUE.scan_text("cuInit(0) failed -> CUDA_ERROR_UNKNOWN: unknown error").ids
    assert (
        "cuda-out-of-memory"
        in CATALOGUE.scan_text("failed to allocate 3.90G: CUDA_ERROR_OUT_OF_MEMORY: out of memory").ids
    )
