"""macOS's loader (dyld) and Metal, read from what they print: the architecture dyld says a
module has and the process needs (a native arm64 Python against an Intel module, a Python under
Rosetta against an arm64 one), the macOS a module was built for (dyld's "built for" and the system
library it expected a symbol in), tensorflow-metal's missing symbol told apart by its kind, and
the reason a Metal command buffer failed, by the driver's name for it."""

from __future__ import annotations

import pytest

from envcheck.explain import PatternsError, explain, load_patterns

CATALOGUE = load_patterns()


def _explained(text: str) -> dict[str, list[str]]:
    return {e.id: [c.id for c in e.causes] for e in explain(CATALOGUE.scan_text(text))}


# --- a module of the other architecture -------------------------------------------------------------

SITE = "/Users/ana/miniforge3/envs/ml/lib/python3.10/site-packages"


def _tried(module: str, have: str, need: str, quote: str = "'", error: str = "ImportError") -> str:
    path = f"{SITE}/{module}"
    if quote == "'":
        arch = f"(have '{have}', need '{need}')"
    else:
        arch = f"(have ({have}), need ({need}))"
    return (
        f"{error}: dlopen({path}, 0x0002): tried: '{path}' (mach-o file, but is an incompatible architecture "
        f"{arch}), '/System/Volumes/Preboot/Cryptexes/OS{path}' (no such file)"
    )


@pytest.mark.parametrize("quote", ["'", "("])  # dyld 4 quotes the names, dyld 3 puts them in parentheses
@pytest.mark.parametrize(
    "module",
    [
        "tensorflow/python/_pywrap_tensorflow_internal.so",
        "grpc/_cython/cygrpc.cpython-310-darwin.so",
        "h5py/defs.cpython-310-darwin.so",
    ],
)
def test_an_intel_module_in_a_native_python(module, quote):
    found = _explained(_tried(module, "x86_64", "arm64e", quote))
    assert found == {"macos-intel-module-in-arm64-python": ["macos-intel-module-in-arm64-python"]}
    # the loader reason's generic cause ("built for another architecture") is not put before it
    assert "wrong-architecture" not in found["macos-intel-module-in-arm64-python"]


def test_dyld_4_naming_two_acceptable_architectures():
    text = _tried("numpy/_core/_multiarray_umath.cpython-312-darwin.so", "x86_64", "arm64e' or 'arm64")
    assert list(_explained(text)) == ["macos-intel-module-in-arm64-python"]


@pytest.mark.parametrize("quote", ["'", "("])
def test_an_arm64_module_in_a_python_under_rosetta(quote):
    found = _explained(_tried("mlx/core.cpython-311-darwin.so", "arm64", "x86_64", quote))
    assert found == {"macos-x86-python-arm64-module": ["macos-x86-python-arm64-module"]}


def test_tensorflow_and_ctypes_report_it_too():
    plugin = _tried(
        "tensorflow-plugins/libmetal_plugin.dylib",
        "arm64",
        "x86_64",
        error="tensorflow.python.framework.errors_impl.NotFoundError",
    )
    assert list(_explained(plugin)) == ["macos-x86-python-arm64-module"]
    assert list(_explained(_tried("pylink/libjlinkarm.dylib", "x86_64", "arm64", error="OSError"))) == [
        "macos-intel-module-in-arm64-python"
    ]


def test_the_checks_name_the_module():
    (e,) = explain(CATALOGUE.scan_text(_tried("h5py/defs.cpython-310-darwin.so", "x86_64", "arm64")))
    lines = [c.line for c in e.causes[0].tell.commands]
    assert f"file '{SITE}/h5py/defs.cpython-310-darwin.so'" in lines


def test_dyld_2_does_not_say_which_way():
    path = (
        "/Users/ana/tensorflow_macos_venv/lib/python3.8/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so"
    )
    first = f"ImportError: dlopen({path}, 6): no suitable image found.  Did find:"
    second = f"\t{path}: mach-o, but wrong architecture"
    found = _explained(first + "\n" + second)
    assert set(found["macos-dyld-wrong-architecture"]) == {
        "macos-x86-python-arm64-module",
        "macos-intel-module-in-arm64-python",
    }
    assert "wrong-architecture" not in found["macos-dyld-wrong-architecture"]
    assert list(_explained(second)) == ["macos-dyld-wrong-architecture"]


@pytest.mark.parametrize(
    "line",
    [
        # file's report on a universal Python: both architectures, nothing refused
        "/Users/ana/venv/bin/python: Mach-O universal binary with 2 architectures: [x86_64:Mach-O 64-bit executable x86_64] [arm64:Mach-O 64-bit executable arm64]",
        # another program's loader line (no Python import)
        "dyld[4242]: Library not loaded: '/usr/local/opt/libomp/lib/libomp.dylib' (mach-o file, but is an incompatible architecture (have 'x86_64', need 'arm64'))",
        # a module that is simply not there
        f"ImportError: dlopen({SITE}/x.cpython-310-darwin.so, 0x0002): tried: '{SITE}/x.cpython-310-darwin.so' (no such file)",
        # the linker's warning while building, not a load
        "ld: warning: ignoring file /usr/local/lib/libfoo.dylib, building for macOS-arm64 but attempting to link with file built for macOS-x86_64",
        # a dylib found under a temporary name (not a Python extension module)
        "/var/folders/qs/T/tmp7xiecla1.dylib: mach-o, but wrong architecture",
    ],
)
def test_what_is_no_architecture_refusal(line):
    assert not {
        "macos-intel-module-in-arm64-python",
        "macos-x86-python-arm64-module",
        "macos-dyld-wrong-architecture",
    } & set(_explained(line))


# --- a module built for a newer macOS -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # dyld 2: "Referenced from: ... (which was built for Mac OS X 10.15)"
        "dyld: lazy symbol binding failed: Symbol not found: ____chkstk_darwin\n"
        f"  Referenced from: {SITE}/tensorflow/python/../libtensorflow_framework.2.dylib (which was built for Mac OS X 10.15)\n"
        "  Expected in: /usr/lib/libSystem.B.dylib",
        # dyld 4: the version and "which is newer than running OS", UUIDs before the paths, one line
        f"ImportError: dlopen({SITE}/mlx/core.cpython-310-darwin.so, 0x0002): Symbol not found: _cblas_sgemm$NEWLAPACK "
        f"Referenced from: <0E1A3A47-C0D2-3B29-9B5B-9B7E2E7F3C11> {SITE}/mlx/lib/libmlx.dylib (built for macOS 13.4 which is newer "
        "than running OS) Expected in: <C0B2F2A2-5B8D-3F0B-A3F2-1F7E0A1B2C3D> /System/Library/Frameworks/Accelerate.framework/Versions/A/Accelerate",
        # only the library that lacks it: a C++ symbol of the system's libc++
        f"ImportError: dlopen({SITE}/onnxruntime/capi/onnxruntime_pybind11_state.so, 2): Symbol not found: "
        "__ZNKSt3__115basic_stringbufIcNS_11char_traitsIcEENS_9allocatorIcEEE3strEv\n"
        f"  Referenced from: {SITE}/onnxruntime/capi/onnxruntime_pybind11_state.so\n"
        "  Expected in: /usr/lib/libc++.1.dylib",
        # a framework the older macOS lacks altogether
        "Library not loaded: /System/Library/Frameworks/FoundationModels.framework/Versions/A/FoundationModels\n"
        "  (built for macOS 26.0 which is newer than running OS)",
        "  Expected in: '/usr/lib/libSystem.B.dylib'",
    ],
)
def test_built_for_a_newer_macos(text):
    found = _explained(text)
    assert found["macos-built-for-newer-macos"][0] == "macos-older-than-build"
    # a missing system symbol is not two releases of a package mixed
    assert "mixed-library-versions" not in found["macos-built-for-newer-macos"]


@pytest.mark.parametrize(
    "line",
    [
        "  Expected in: flat namespace",  # two releases of a package: the symbol is nobody's
        f"  Expected in: {SITE}/tensorflow/libtensorflow_framework.2.dylib",  # a package's own library
        f"  Referenced from: {SITE}/tensorflow/python/_pywrap_tensorflow_internal.so",
        "ProductVersion: 10.15.7",
        "Built for macOS 14 and newer.",
    ],
)
def test_what_is_no_minimum_os_refusal(line):
    assert "macos-built-for-newer-macos" not in _explained(line)


# --- tensorflow-metal's missing symbol -------------------------------------------------------------

PLUGIN = f"{SITE}/tensorflow-plugins/libmetal_plugin.dylib"


@pytest.mark.parametrize(
    "symbol",
    [
        "_OBJC_CLASS_$_MPSGraphExecutableExecutionDescriptor",
        "_OBJC_CLASS_$_MTLResidencySetDescriptor",
        "_OBJC_METACLASS_$_MPSGraphDevice",
    ],
)
def test_an_apple_framework_class_is_the_macos_version(symbol):
    found = _explained(
        f"tensorflow.python.framework.errors_impl.NotFoundError: dlopen({PLUGIN}, 6): Symbol not found: {symbol}"
    )
    assert found["metal-plugin-mismatch"][0] == "macos-too-old"


def test_dyld_saying_the_plugin_needs_a_newer_macos_is_the_same_explanation():
    text = (
        f"tensorflow.python.framework.errors_impl.NotFoundError: dlopen({PLUGIN}, 6): Symbol not found: _OBJC_CLASS_$_MPSGraphExecutableSerializationDescriptor\n"
        f"  Referenced from: {PLUGIN} (which was built for Mac OS X 13.0)\n"
        "  Expected in: /System/Library/Frameworks/MetalPerformanceShadersGraph.framework/Versions/A/MetalPerformanceShadersGraph"
    )
    found = _explained(text)
    assert list(found) == ["metal-plugin-mismatch"]
    assert found["metal-plugin-mismatch"][0] == "macos-too-old"


def test_a_tensorflow_c_api_function_is_the_tensorflow_release():
    for text in (
        f"tensorflow.python.framework.errors_impl.NotFoundError: dlopen({PLUGIN}, 0x0006): symbol not found in flat namespace '_TF_GetInputPropertiesList'",
        f"tensorflow.python.framework.errors_impl.NotFoundError: dlopen({PLUGIN}, 6): Symbol not found: _TF_AssignVariable",
    ):
        found = _explained(text)
        assert found["metal-plugin-mismatch"][0] == "metal-plugin-tf-mismatch"
        assert "mixed-library-versions" not in found["metal-plugin-mismatch"]


# --- a Metal command buffer that failed --------------------------------------------------------------


@pytest.mark.parametrize(
    "line, first",
    [
        (
            "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
            "metal-gpu-out-of-memory",
        ),
        (
            "error: Insufficient Memory (00000008:kIOAccelCommandBufferCallbackErrorOutOfMemory)",
            "metal-gpu-out-of-memory",
        ),
        ("\tCaused GPU Timeout Error (00000002:kIOAccelCommandBufferCallbackErrorTimeout)", "metal-gpu-timeout"),
        (
            "RuntimeError: [METAL] Command buffer execution failed: Caused GPU Hang Error (00000003:kIOGPUCommandBufferCallbackErrorHang)",
            "metal-gpu-timeout",
        ),
        (
            "error: Impacting Interactivity (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)",
            "metal-gpu-timeout",
        ),
        ("\tInternal Error (0000000e:Internal Error)", "metal-gpu-timeout"),
        (
            "error: Ignored (for causing prior/excessive GPU errors) (00000004:kIOGPUCommandBufferCallbackErrorSubmissionsIgnored)",
            "metal-gpu-earlier-error",
        ),
        (
            "Discarded (victim of GPU error/recovery) (00000005:kIOGPUCommandBufferCallbackErrorInnocentVictim)",
            "metal-gpu-earlier-error",
        ),
        ("\tIgnored (for causing prior/excessive GPU errors) (IOAF code 4)", "metal-gpu-earlier-error"),
        ("Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault)", "metal-gpu-page-fault"),
        # without the driver's number
        (
            "[METAL] Command buffer execution failed: GPU Timeout (kIOGPUCommandBufferCallbackErrorTimeout)",
            "metal-gpu-timeout",
        ),
        ("Caused GPU Timeout Error (kIOAccelCommandBufferCallbackErrorTimeout)", "metal-gpu-timeout"),
        # a name the catalogue has no cause for, and the old form's other codes: Metal's other reasons
        ("error: Not Permitted (00000007:kIOGPUCommandBufferCallbackErrorNotPermitted)", "metal-gpu-error-other"),
        ("\tDiscarded (IOAF code 5)", "metal-gpu-error-other"),
    ],
)
def test_the_drivers_name_says_why(line, first):
    found = _explained(line)
    assert found["metal-command-buffer-error"][0] == first


def test_one_failure_printed_by_tensorflows_metal_plugin_is_one_explanation():
    text = (
        "Error: command buffer exited with error status.\n"
        "\tThe Metal Performance Shaders operations encoded on it may not have completed.\n"
        "\tError: \n\t(null)\n"
        "\tInsufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n"
        "\t<AGXG14XFamilyCommandBuffer: 0x2a1c3e5f0>"
    )
    assert _explained(text) == {"metal-command-buffer-error": ["metal-gpu-out-of-memory", "metal-gpu-error-other"]}


@pytest.mark.parametrize(
    "line",
    [
        "Error: command buffer exited with error status.",  # the reason is on a later line
        "ggml_metal_graph_compute: command buffer 0 failed with status 5",  # MTLCommandBufferStatusError, no reason
        "MTLCommandBufferStatusError",
        "Metal device set to: Apple M2 Max",
        "Internal Error (see the log above)",
    ],
)
def test_what_names_no_command_buffer_failure(line):
    assert "metal-command-buffer-error" not in _explained(line)


# --- the catalogue's `refines` -----------------------------------------------------------------------


def test_refines_is_a_list_of_cause_ids(tmp_path):
    text = tmp_path / "patterns.yaml"
    sample = """\
schema_version: 1
patterns:
  - id: sample-message
    title: Sample failed
    needles: ["Sample "]
    regex: ['Sample failed']
    harmless: false
    meaning: It failed.
    causes:
      - id: first-cause
        refines: [Not An Id]
        text: Broken.
        tell:
          text: Look.
      - id: second-cause
        text: Other.
        tell:
          text: Look again.
    fix:
      text: Fix it.
    rule_ids: []
    sources: [https://example.org/doc]
    examples: ["Sample failed"]
    near_misses: ["Sample worked"]
"""
    text.write_text(sample)
    with pytest.raises(PatternsError, match="refines"):
        load_patterns(text)
    text.write_text(sample.replace("[Not An Id]", "[wrong-architecture]"))
    assert load_patterns(text).patterns[0].causes[0].refines == ("wrong-architecture",)


# --- a wheel whose tags do not fit -------------------------------------------------------------------


def _refused(wheel: str) -> list[str]:
    return _explained(f"ERROR: {wheel} is not a supported wheel on this platform.")["pip-unsupported-wheel"]


@pytest.mark.parametrize(
    "wheel",
    [
        "tensorflow-2.6.0-cp38-cp38-macosx_11_0_x86_64.whl",
        "tensorflow_macos-2.9.2-cp39-cp39-macosx_12_0_arm64.whl",
        "tensorflow-2.16.1-cp312-cp312-macosx_14_0_arm64.whl",
    ],
)
def test_a_macos_11_or_later_tag_is_first_the_tags_pip_computes(wheel):
    assert _refused(wheel)[0] == "pip-too-old-for-macos-tags"


@pytest.mark.parametrize(
    "wheel",
    [
        "tensorflow-1.8.0-cp36-cp36m-macosx_10_7_x86_64.whl",  # macOS 10: nothing moved there
        "tensorflow_gpu-2.10.0-cp310-cp310-win_amd64.whl",
        "tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    ],
)
def test_other_wheels_are_first_another_python_or_system(wheel):
    causes = _refused(wheel)
    assert causes[:2] == ["python-version-unsupported", "package-not-for-platform"]
    assert "pip-too-old-for-macos-tags" not in causes or wheel.count("macosx_10")


@pytest.mark.parametrize(
    "line",
    [
        "Processing ./tensorflow-2.6.0-cp38-cp38-macosx_11_0_x86_64.whl",
        "Successfully installed tensorflow-2.6.0",
        "ERROR: Invalid wheel filename (wrong number of parts): 'tensorflow.whl'",
        "tensorflow.whl is not a supported wheel on this platform.",  # no tags to read
    ],
)
def test_what_is_no_refused_wheel(line):
    assert "pip-unsupported-wheel" not in _explained(line)


# --- a symbol no loaded image exports: dyld's own "undefined symbol" ---------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # dyld 4 (macOS 12+): quoted, after "in flat namespace"
        f"ImportError: dlopen({SITE}/tensorflow_text/python/ops/_regex_split_ops.so, 0x0002): symbol not found "
        "in flat namespace '__ZN10tensorflow15OpKernelContext5inputEN4absl12lts_2023080211string_viewEPPKNS_6TensorE'",
        # dyld 2/3: "Symbol not found: " (Referenced from / Expected in follow on later lines)
        f"ImportError: dlopen({SITE}/tensorflow_addons/custom_ops/image/_image_ops.dylib, 6): Symbol not found: "
        "__ZN10tensorflow8internal21CheckOpMessageBuilder9NewStringEv",
    ],
)
def test_an_op_library_built_for_another_tensorflow_on_macos(text):
    found = _explained(text)
    assert list(found) == ["loader-undefined-symbol"]
    # the mangled name's namespace is TensorFlow's (Mach-O adds one underscore before _ZN)
    assert found["loader-undefined-symbol"][0] == "custom-op-other-tensorflow"
    assert "conflicting-tensorflow-installs" not in found["loader-undefined-symbol"]


@pytest.mark.parametrize(
    "text",
    [
        f"ImportError: dlopen({SITE}/tensorflow/python/_pywrap_tensorflow_internal.so, 0x0002): symbol not found in "
        "flat namespace '__ZN3tsl8internal15LogMessageFatalD1Ev'",
        # the same on Linux: glibc's wording, TensorFlow's own module
        "ImportError: /usr/local/lib/python3.8/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so: "
        "undefined symbol: _ZN10tensorflow8OpKernel11TraceStringEPNS_15OpKernelContextEb",
    ],
)
def test_tensorflows_own_module_missing_its_own_symbol_is_two_releases_mixed(text):
    causes = _explained(text)["loader-undefined-symbol"]
    assert causes[0] == "conflicting-tensorflow-installs"
    assert causes[-1] == "custom-op-other-tensorflow"  # TensorFlow's own module is no op library


@pytest.mark.parametrize(
    "text",
    [
        # no package of the stack: another program's library
        "OSError: dlopen(/Users/ana/lib/libjlinkarm.dylib, 0x0006): symbol not found in flat namespace '_JLINK_Open'",
        # the symbol is the system's: the macOS is too old, not two releases mixed
        f"ImportError: dlopen({SITE}/tensorflow/python/_pywrap_tensorflow_internal.so, 2): Symbol not found: "
        "_aligned_alloc\n  Referenced from: /Users/ana/tf/libtensorflow_framework.2.dylib (which was built for Mac OS X 10.15)\n"
        "  Expected in: /usr/lib/libSystem.B.dylib",
    ],
)
def test_what_is_not_an_undefined_package_symbol_on_macos(text):
    assert "loader-undefined-symbol" not in _explained(text)
