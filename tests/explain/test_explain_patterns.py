"""The bundled catalogue: every pattern explains its real examples and none of its near misses."""

from __future__ import annotations

import re
import shutil
import string
import subprocess

import pytest

from envcheck.explain import MAX_LINE_BYTES, Catalogue, PatternsError, load_patterns, repeat_problem
from envcheck.explain.catalogue import fill

CATALOGUE = load_patterns()
PATTERNS = CATALOGUE.patterns


def _rule_ids() -> set[str]:
    """The doctor's registered rules: the only ids a pattern may name."""
    from envcheck.rules import RULES, load_rule_modules

    load_rule_modules()
    return set(RULES)


RULE_CATALOGUE = _rule_ids()

EXAMPLES = [(p.id, text) for p in PATTERNS for text in p.examples]
NEAR_MISSES = [(p.id, text) for p in PATTERNS for text in p.near_misses]


def test_catalogue_is_large_enough_and_ids_are_unique():
    ids = [p.id for p in PATTERNS]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("pattern_id, text", EXAMPLES, ids=[f"{i}:{n}" for n, (i, _) in enumerate(EXAMPLES)])
def test_each_example_is_explained_by_its_own_pattern_only(pattern_id, text):
    result = CATALOGUE.scan_text(text)
    assert result.ids == [pattern_id]


@pytest.mark.parametrize("pattern_id, text", NEAR_MISSES, ids=[f"{i}:{n}" for n, (i, _) in enumerate(NEAR_MISSES)])
def test_near_misses_are_not_explained_by_that_pattern(pattern_id, text):
    assert pattern_id not in CATALOGUE.scan_text(text).ids


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.id for p in PATTERNS])
def test_pattern_texts_fill_in_completely(pattern):
    """Filled from a real example, no text keeps a placeholder or ends up with an empty value."""
    from envcheck.explain import explain

    (explanation,) = explain(CATALOGUE.scan_text(pattern.examples[0]))
    texts = [explanation.title, explanation.meaning, explanation.cause, explanation.fix.text]
    texts += [c.line for c in explanation.fix.commands]
    for text in texts:
        assert not re.search(r"(?<!\$)\{[a-z_]+\}", text), text
    for name in (f for _, f, _, _ in string.Formatter().parse(pattern.title) if f):
        assert explanation.variables[name], f"{name} is empty in the title of {pattern.id}"


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.id for p in PATTERNS])
def test_rule_ids_are_from_the_agreed_catalogue(pattern):
    assert set(pattern.rule_ids) <= RULE_CATALOGUE


@pytest.mark.parametrize("pattern", PATTERNS, ids=[p.id for p in PATTERNS])
def test_every_pattern_names_a_source(pattern):
    assert pattern.sources and all(s.startswith("https://") for s in pattern.sources)


def test_regexes_have_no_unbounded_or_nested_repeats():
    for pattern in PATTERNS:
        for regex in pattern.regexes:
            assert repeat_problem(regex.pattern) is None, (pattern.id, regex.pattern)


@pytest.mark.parametrize("filler", ["a", "0", " ", "'", "(", "/", "\\"])
def test_every_regex_survives_a_line_far_longer_than_the_scanner_reads(filler):
    """Hostile input: each regex, run directly on one character sixteen times the longest line the
    scanner ever hands it (MAX_LINE_BYTES), returns: a backtracking blow-up on that would never end;
    a linear regex is done in a moment (a megabyte cost a minute of CPU and showed nothing more)."""
    line = filler * (16 * MAX_LINE_BYTES)
    for pattern in PATTERNS:
        for regex in pattern.regexes:
            assert regex.search(line) is None


def test_every_regex_survives_a_megabyte_of_its_own_needle():
    for pattern in PATTERNS:
        for needle in pattern.needles:
            line = (needle + " ") * (MAX_LINE_BYTES // (len(needle) + 1))
            for regex in pattern.regexes:
                regex.search(line)  # must return; a match is allowed


# The messages the issue names, as users paste them: each must be recognised as the right thing.
NAMED_MESSAGES = {
    "win-cudart-dll-not-found": "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a directory that is named in your %PATH% environment variable. Download and install CUDA 10.0 from this URL: https://developer.nvidia.com/cuda-toolkit-archive",
    "win-dll-load-failed": "ImportError: DLL load failed while importing _pywrap_tensorflow_internal: The specified module could not be found.",
    "cudart-not-loaded": "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory",
    "cannot-dlopen-gpu-libraries": "Cannot dlopen some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to use GPU.",
    "cuinit-no-device": "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
    "cuinit-no-driver": "failed call to cuInit: UNKNOWN ERROR (303)",
    "cuinit-unknown-error": "failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
    "cuda-compat-not-supported": "failed call to cuInit: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: forward compatibility was attempted on non supported HW",
    "cuda-driver-mismatch": "failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
    "cuda-driver-too-old": "CUDA driver version is insufficient for CUDA runtime version",
    "compute-capability-too-low": "Ignoring visible gpu device (device: 0, name: GeForce GT 730, pci bus id: 0000:01:00.0, compute capability: 3.5) with Cuda compute capability 3.5. The minimum required Cuda capability is 3.7.",
    "cudnn-handle-failed": "Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
    "cudnn-version-mismatch": "Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0",
    "nvml-driver-library-mismatch": "Failed to initialize NVML: Driver/library version mismatch",
    "nvidia-smi-no-driver": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
    "oom-allocating-tensor": "OOM when allocating tensor with shape[32,64,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
    "illegal-instruction": "Illegal instruction (core dumped)",
    "cpu-optimized-notice": "This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.",
    "onednn-notice": "oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders.",
    "no-cuda-drivers": "Could not find cuda drivers on your machine, GPU will not be used.",
    "factory-registered-twice": "Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN when one has already been registered",
    "tensorrt-not-found": "TF-TRT Warning: Could not find TensorRT",
    "numa-node-notice": "successful NUMA node read from SysFS had negative value (-1), but there must be at least one NUMA node, so returning NUMA node zero",
    "cpu-instructions-not-used": "Your CPU supports instructions that this TensorFlow binary was not compiled to use: AVX2 FMA",
    "pip-no-matching-tensorflow": "ERROR: No matching distribution found for tensorflow",
    "cudnn-sublibrary-not-loaded": "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
    "dnn-library-not-found": "UnimplementedError: DNN library is not found.",
    "cuda-out-of-memory": "failed to allocate 3.90G (4185718784 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    "blas-launch-failed": "Blas GEMM launch failed : a.shape=(100, 784), b.shape=(784, 10), m=100, n=10, k=784",
    "cuda-illegal-address": "Check failed: cuCtxSynchronize() == CUDA_SUCCESS (CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered)",
    "devices-already-initialized": "RuntimeError: Physical devices cannot be modified after being initialized",
    "memory-growth-differs": "ValueError: Memory growth cannot differ between GPU devices",
    "no-opkernel-registered": "No OpKernel was registered to support Op 'CudnnRNN' used by {{node lstm/CudnnRNN}} with these attrs",
    "no-gpu-kernel-for-op": "Could not satisfy explicit device specification '/device:GPU:0' because no supported kernel for GPU devices is available.",
    "gpu-device-not-registered": "Cannot assign a device for operation MatMul: Could not satisfy explicit device specification '/device:GPU:1' because no devices matching that specification are registered in this process",
    "variable-already-exists": "ValueError: Variable batch_normalization_1/moving_mean/biased already exists, disallowed. Did you mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?",
    "model-not-picklable": "TypeError: can't pickle _thread.RLock objects",
    "multi-gpu-model-removed": "AttributeError: module 'keras.utils' has no attribute 'multi_gpu_model'",
    "ptxas-unsupported-version": "ptxas fatal   : Unsupported .version 7.1; current version is '7.0'",
    "libdevice-not-found": "InternalError: libdevice not found at ./libdevice.10.bc [Op:__inference_train_step_1234]",
}


@pytest.mark.parametrize("pattern_id", sorted(NAMED_MESSAGES))
def test_messages_named_in_the_issue_are_recognised(pattern_id):
    assert CATALOGUE.scan_text(NAMED_MESSAGES[pattern_id]).ids == [pattern_id]


def test_named_messages_cover_distinct_patterns():
    assert len(set(NAMED_MESSAGES)) >= 30


@pytest.mark.parametrize(
    "text, library, cuda_version, cudnn_version",
    [
        ("Could not find 'cudart64_100.dll'.", "cudart64_100.dll", "10.0", ""),
        ("Could not find 'cudart64_90.dll'.", "cudart64_90.dll", "9.0", ""),
        ("Could not find 'cudart64_101.dll'.", "cudart64_101.dll", "10.1", ""),
        ("Could not find 'cudnn64_7.dll'.", "cudnn64_7.dll", "", "7"),
        (
            "Could not load dynamic library 'cudart64_110.dll'; dlerror: cudart64_110.dll not found",
            "cudart64_110.dll",
            "11.0",
            "",
        ),
        (
            "Could not load dynamic library 'cudart64_12.dll'; dlerror: cudart64_12.dll not found",
            "cudart64_12.dll",
            "12",
            "",
        ),
        ("Could not load dynamic library 'libcudart.so.10.1'; dlerror: x", "libcudart.so.10.1", "10.1", ""),
        ("Could not load dynamic library 'libcudnn.so.8'; dlerror: x", "libcudnn.so.8", "", "8"),
    ],
)
def test_library_names_give_the_exact_versions(text, library, cuda_version, cudnn_version):
    (occurrence,) = CATALOGUE.scan_text(text).occurrences
    assert occurrence.variables["library"] == library
    assert occurrence.variables["cuda_version"] == cuda_version
    assert occurrence.variables["cudnn_version"] == cudnn_version


def test_setup_post_message_gives_a_specific_title_and_fix():
    from envcheck.explain import explain

    (explanation,) = explain(CATALOGUE.scan_text(NAMED_MESSAGES["win-cudart-dll-not-found"]))
    assert explanation.title == "CUDA runtime cudart64_100.dll not found (this TensorFlow needs CUDA 10.0)"
    assert "CUDA 10.0" in explanation.fix.text
    assert r"CUDA\v10.0\bin" in explanation.fix.text
    assert explanation.rule_ids == ("EC-LIB-001",)
    assert not explanation.harmless


def test_loading_is_cached():
    assert load_patterns() is CATALOGUE
    assert isinstance(CATALOGUE, Catalogue)


def test_every_bundled_regex_compiles():
    # the bundled catalogue compiles its regexes on first use; this is where a mistake shows
    for pattern in PATTERNS:
        for regex in pattern.regexes:
            assert regex.compiled.flags & re.IGNORECASE, (pattern.id, regex.pattern)


def test_the_bundled_catalogue_holds_every_rule_a_users_file_is_held_to():
    # at start-up the bundled file's regexes are neither parsed nor checked (only their group
    # names are read); here the same file is read the way a --patterns file is, every rule
    # applied, and what the lazy reading gives must be what the parse gives
    from envcheck.explain.catalogue_file import read_catalogue

    checked = {p.id: p for p in read_catalogue(CATALOGUE.path, eager=True)[0]}
    for pattern in PATTERNS:
        assert len(pattern.regexes) == len(checked[pattern.id].regexes)
        for lazy, parsed in zip(pattern.regexes, checked[pattern.id].regexes):
            assert set(lazy.groupindex) == set(parsed.groupindex), (pattern.id, lazy.pattern)
            assert lazy.clauses == parsed.clauses, (pattern.id, lazy.pattern)


def test_other_catalogues_compile_when_they_load(tmp_path):
    # a look-behind of varying width parses but does not compile: a --patterns file says so at once
    text = CATALOGUE.path.read_text(encoding="utf-8")
    old = "      - '(?-i:(?:^|[\\s:\\]\"''`])Illegal instruction)(?: \\(core dumped\\))?'"
    assert old in text
    path = tmp_path / "patterns.yaml"
    path.write_text(text.replace(old, "      - '(?<=a|bb)Illegal instruction'", 1))
    with pytest.raises(PatternsError, match="look-behind requires fixed-width pattern"):
        load_patterns(path)


def test_required_literals_never_skip_a_line_a_regex_matches():
    # every regex skips lines that lack what all its matches hold; over every example and near
    # miss of the catalogue, a line it matches must never be skipped
    texts = [t for p in PATTERNS for t in (*p.examples, *p.near_misses)]
    for pattern in PATTERNS:
        for regex in pattern.regexes:
            for text in texts:
                if regex.compiled.search(text):
                    assert regex.may_match(text.lower().encode("utf-8")), (pattern.id, regex.pattern, text)


@pytest.mark.parametrize(
    "source, clauses",
    [
        (
            "Could not load dynamic library '(?P<l>libcudart|cudart64_)x",
            ((b"cudart64_", b"libcudart"), (b"could not load dynamic library '",)),
        ),
        ("(?:abc|de)fgh", ((b"fgh",),)),  # a branch with a short run adds no clause
        ("xyz(?: optional)?end", ((b"xyz",), (b"end",))),
        ("(?!nothere)real(?:one|two (?:three|four))", ((b"one", b"two "), (b"real",))),
        ("(?-i:Illegal) instruction", ((b"illegal",), (b" instruction",))),
    ],
)
def test_required_literals(source, clauses):
    from envcheck.explain.regexes import _required_literals, _sre_parse

    assert set(_required_literals(_sre_parse().parse(source))) == set(clauses)


def _catalogue_commands() -> set[tuple[str, str]]:
    found = set()
    for pattern in PATTERNS:
        fixes = list(pattern.fixes) if isinstance(pattern.fixes, (list, tuple)) else [pattern.fixes]
        fixes += [part for cause in pattern.causes for part in (cause.tell, getattr(cause, "fix", None))]
        found |= {(c.shell, c.line) for fix in fixes if fix is not None for c in fix.commands}
    return found


COMMANDS = sorted(_catalogue_commands())


def test_no_command_needs_editing_before_it_is_pasted():
    # a command with a <placeholder> runs as nobody wants it to: what the user must fill in is
    # said in the text instead ("With the placeholder filled in: ...")
    held = [line for _, line in COMMANDS if re.search(r"<[a-z][a-z_. ]*>", fill(line, {}))]
    assert held == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_every_bash_command_of_the_catalogue_parses():
    # a line of Python (a call to make in the program) is no shell command: it goes in the text
    bad = []
    for shell, line in COMMANDS:
        if shell in ("bash", "any"):
            text = re.sub(r"\{[a-z_]+\}", "X", line)  # a template's field, filled from the message
            done = subprocess.run(["bash", "-n", "-c", text], capture_output=True, text=True, timeout=30)
            if done.returncode:
                bad.append((line, done.stderr.strip()))
    assert bad == []
