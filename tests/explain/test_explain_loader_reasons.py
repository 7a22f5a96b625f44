"""Every reason the dynamic loaders give, read from each wording (envcheck/explain/loader_reasons.py):
glibc's ld.so (elf/dl-load.c, dl-load.h, dl-reloc.c, dl-lookup.c, dl-version.c, then strerror's
text), musl's (ldso/dynlink.c) and Apple's dyld. Each message is written from the loader's format
string with a library and a path chosen here (paths with spaces, several libraries); a pattern that
explains such a message ranks the reason's cause first, and prose that mentions the words is no
loader's reason."""

from __future__ import annotations

import shlex

import pytest

from envcheck.explain import explain
from envcheck.explain.loader_reasons import LOADER_REASONS, MEANINGS
from envcheck.explain.normalise import normalise_line
from envcheck.explain.parts import read_parts
from tests.explain.test_explain_source_families import CATALOGUE

SPACED = "/home/my user/venv/lib/python3.11/site-packages"

# (message, reason)
READINGS = [
    (
        f"ImportError: {SPACED}/torch/lib/libgomp-a34b3233.so.1: cannot allocate memory in static TLS block",
        "static-tls",
    ),
    ("OSError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block", "static-tls"),
    (
        "ImportError: Error relocating /usr/lib/python3.11/site-packages/x/_ext.abi3.so: (null): initial-exec TLS "
        "resolves to dynamic definition in /usr/lib/python3.11/site-packages/x/_ext.abi3.so",
        "static-tls",
    ),
    (
        f"ImportError: {SPACED}/tensorflow/python/_pywrap_tensorflow_internal.so: failed to map segment from shared object",
        "segment-map-failed",
    ),
    (
        "ImportError: /tmp/torchinductor_root/abc/cuda_utils.so: failed to map segment from shared object: Operation not permitted",
        "segment-map-failed",
    ),
    ("ImportError: /opt/lib/libfoo.so.2: cannot map zero-fill pages", "segment-map-failed"),
    (
        "ImportError: /usr/lib64/python3.9/site-packages/jaxlib/xla_extension.so: cannot restore segment prot after reloc: Permission denied",
        "memory-protection",
    ),
    (
        "ImportError: /opt/lib/libnvinfer.so.8: cannot make segment writable for relocation: Permission denied",
        "memory-protection",
    ),
    ("ImportError: /opt/lib/libcudnn.so.8: cannot change memory protections", "memory-protection"),
    ("Error relocating /lib/ld-musl-x86_64.so.1: RELRO protection failed: Permission denied", "memory-protection"),
    ("ImportError: /opt/x/libtorch_cpu.so: ELF file OS ABI invalid", "not-loadable-elf"),
    ("ImportError: /opt/x/libtorch_cpu.so: ELF file ABI version invalid", "not-loadable-elf"),
    ("ImportError: /opt/x/_C.so: ELF file version does not match current one", "not-loadable-elf"),
    ("ImportError: /opt/x/_C.so: only ET_DYN and ET_EXEC can be loaded", "not-loadable-elf"),
    ("OSError: /opt/x/libcudart.so: object file has no dynamic section", "not-loadable-elf"),
    ("OSError: /opt/x/tool.so: cannot dynamically load position-independent executable", "not-loadable-elf"),
    ("ImportError: /opt/x/libfoo.so: unsupported version 2 of Verdef record", "not-loadable-elf"),
    ("ImportError: /opt/x/libfoo.so: ELF file data encoding not little-endian", "wrong-architecture"),
    ("ImportError: /opt/x/libfoo.so: wrong ELF class: ELFCLASS32", "wrong-architecture"),
    (
        "\t/Users/u/venv/lib/python3.8/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so: mach-o, but wrong architecture",
        "wrong-architecture",
    ),
    ("OSError: /opt/cuda/lib64: cannot read file data: Is a directory", "not-a-file"),
    ("OSError: libcudnn.so.8: cannot open shared object file: Too many open files", "too-many-open-files"),
    ("OSError: libcublas.so.12: cannot open shared object file: Cannot allocate memory", "out-of-memory"),
    (
        "ImportError: /opt/x/libtensorflow_framework.so.2: cannot create shared object descriptor: Cannot allocate memory",
        "out-of-memory",
    ),
    ("OSError: libcudart.so.12: cannot open shared object file: Permission denied", "permission-denied"),
    ("OSError: libcudart.so.12: cannot open shared object file: No such file or directory", "not-found"),
    (
        "ImportError: /opt/x/_ext.so: cannot enable executable stack as shared object requires: Invalid argument",
        "executable-stack",
    ),
    (
        "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /opt/x/_ext.so)",
        "version-not-found",
    ),
    ("Error relocating /usr/lib/libtensorflow.so.2: __memcpy_chk: symbol not found", "undefined-symbol"),
    (
        "Error: Error loading shared library libstdc++.so.6: No such file or directory (needed by /usr/local/lib/libtensorflow.so.2)",
        "other-file",
    ),
    (
        "dlopen(/Users/u/venv/lib/python3.12/site-packages/jaxlib/xla_extension.so, 0x0002): tried: "
        "'/Users/u/venv/lib/python3.12/site-packages/jaxlib/xla_extension.so' (code signature in "
        "<B5B9A245-57BA-39C7-AAB3-5F77209D44B8> '/Users/u/venv/lib/python3.12/site-packages/jaxlib/xla_extension.so' not "
        "valid for use in process: mapped file has no Team ID and is not a platform binary (signed with custom identity or adhoc?))",
        "code-signature",
    ),
    (
        "dlopen(/opt/x/libtf.dylib, 0x0002): tried: '/opt/x/libtf.dylib' (not a mach-o file), '/usr/lib/libtf.dylib' (no such file)",
        "damaged-file",
    ),
    (
        "dlopen(/opt/x/_C.so, 0x0002): Library not loaded: @rpath/libomp.dylib Reason: tried: '/opt/x/libomp.dylib' "
        "(mach-o file, but is an incompatible architecture (have 'x86_64', need 'arm64'))",
        "wrong-architecture",
    ),
    (
        "dlopen(/opt/x/_C.so, 0x0002): Symbol not found: _cblas_sgemm$NEWLAPACK Referenced from: /opt/x/_C.so "
        "(built for macOS 14.0 which is newer than running OS)",
        "os-too-old",
    ),
]


@pytest.mark.parametrize("message,reason", READINGS)
def test_every_reason_is_read_from_its_wording(message, reason):
    parts = read_parts(normalise_line(message))
    assert parts.get("dlerror_reason") == reason
    assert parts["dlerror_meaning"] == MEANINGS[reason]


def test_every_reason_of_the_table_is_read_and_has_a_source():
    read = {reason for _m, reason in READINGS}
    for name, _regex, meaning, source in LOADER_REASONS:
        assert name in read, name
        assert meaning and source.startswith("https://")


# prose and other programs' lines that hold the words are no loader's reason
QUIET = [
    "the static TLS block is sized when the program starts, so libraries loaded later use dynamic TLS",
    "Cannot allocate memory while reading the dataset shard 3",
    "error: failed to map segment of the index file, retrying",
    "Error relocating the index: the shard was not found",
    "the ELF file format is described in elf(5)",
    "model.dylib is a directory in this bundle",
    "nccl is not found in the test matrix, skipping",
]


@pytest.mark.parametrize("line", QUIET)
def test_prose_is_not_read_as_a_loader_reason(line):
    assert "dlerror_reason" not in read_parts(normalise_line(line))


def test_a_path_with_spaces_is_kept_and_quoted_for_the_shell():
    parts = read_parts(normalise_line(READINGS[0][0]))
    assert parts["dlerror_path"] == f"{SPACED}/torch/lib/libgomp-a34b3233.so.1"
    assert parts["dlerror_path_q"] == shlex.quote(parts["dlerror_path"])
    assert parts["dlerror_file"] == "libgomp-a34b3233.so.1"


def test_musl_names_the_dependency_and_itself():
    parts = read_parts(
        "Error loading shared library ld-linux-x86-64.so.2: No such file or directory "
        "(needed by /app/node_modules/@tensorflow/tfjs-node/deps/lib/libtensorflow.so.2)"
    )
    assert parts["dlerror_loader"] == "musl"
    assert parts["dependency"] == "ld-linux-x86-64.so.2"
    assert "dlerror_loader" not in read_parts(
        "OSError: libfoo.so.1: cannot open shared object file: No such file or directory"
    )


def first_cause(message: str) -> tuple[str, str, tuple[str, ...]]:
    result = CATALOGUE.scan_text(message)
    explanations = explain(result)
    assert explanations, message
    cause = explanations[0].causes[0]
    commands = tuple(c.line for c in cause.tell.commands) if cause.tell else ()
    return explanations[0].id, cause.id, commands


# (message, pattern, first cause): the reason's cause ranks before "not installed"
RANKED = [
    (READINGS[0][0], "loader-static-tls", "static-tls-exhausted"),
    (
        "ImportError: libgomp.so.1: cannot allocate memory in static TLS block",
        "loader-static-tls",
        "static-tls-exhausted",
    ),
    (READINGS[3][0], "loader-refused-library", "noexec-mount"),
    (READINGS[6][0], "loader-refused-library", "selinux-denied"),
    (READINGS[10][0], "loader-refused-library", "not-loadable-elf"),
    (READINGS[28][0], "loader-refused-library", "glibc-build-on-musl"),
    (
        "Error loading shared library ld-linux-x86-64.so.2: No such file or directory (needed by "
        "/app/node_modules/@tensorflow/tfjs-node/deps/lib/libtensorflow.so.2)",
        "loader-refused-library",
        "glibc-build-on-musl",
    ),
    (READINGS[30][0], "loader-refused-library", "library-validation"),
    (  # TensorFlow's own loader line, with a reason beyond "not found": the reason's cause, not "not installed"
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudnn.so.8'; "
        "dlerror: /usr/local/cuda/lib64/libcudnn.so.8: failed to map segment from shared object",
        None,
        "noexec-mount",
    ),
    (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; "
        "dlerror: libcudart.so.11.0: cannot open shared object file: Too many open files",
        None,
        "open-file-limit",
    ),
]


@pytest.mark.parametrize("message,pattern,cause", RANKED)
def test_the_reasons_cause_ranks_first(message, pattern, cause):
    got_pattern, got_cause, commands = first_cause(message)
    if pattern is not None:
        assert got_pattern == pattern
    assert got_cause == cause
    for line in commands:
        assert "{" not in line and "the library" not in line


def test_the_preload_command_quotes_a_path_with_spaces():
    _p, _c, commands = first_cause(READINGS[0][0])
    assert commands == (f"export LD_PRELOAD={shlex.quote(SPACED + '/torch/lib/libgomp-a34b3233.so.1')}",)


def test_other_software_with_the_same_reason_is_left_alone():
    # a system program's loader line names no library of the stack
    assert (
        CATALOGUE.scan_text(
            "/usr/sbin/squid3: error while loading shared libraries: cannot restore segment prot after reloc: Permission denied"
        ).ids
        == []
    )


def test_windows_bad_image_status_names_the_architecture_first():
    # NTSTATUS 0xC000007B (STATUS_INVALID_IMAGE_FORMAT), as an IDE prints it, signed and in hex
    for message in ("Process finished with exit code -1073741701 (0xC000007B)", "exit code 3221225595"):
        (explanation,) = explain(CATALOGUE.scan_text(message))
        assert explanation.causes[0].id == "dll-wrong-architecture"
    # another status of the same table keeps its own cause
    (explanation,) = explain(CATALOGUE.scan_text("Process finished with exit code -1073741515 (0xC0000135)"))
    assert explanation.causes[0].id == "dll-dependency-missing"


def test_a_reason_whose_file_was_not_read_gives_no_command_to_paste():
    # "ls -l the library" is no command: where the message named no file, the check is said in words
    from envcheck.explain.explanations import part_causes

    for reason in ("damaged-file", "permission-denied", "wrong-architecture"):
        (cause,) = part_causes({"dlerror_reason": reason})
        assert cause.tell.commands == (), reason
        assert cause.tell.text
        (named,) = part_causes({"dlerror_reason": reason, "library_file": "libcudnn.so.8"})
        assert [c.line for c in named.tell.commands] and all("the library" not in c.line for c in named.tell.commands)
        assert "libcudnn.so.8" in named.tell.commands[0].line


def test_a_file_value_with_shell_characters_is_quoted_for_bash():
    from envcheck.explain.explanations import part_causes

    (cause,) = part_causes({"dlerror_reason": "damaged-file", "library_file": "lib cudnn (copy).so.8"})
    assert cause.tell.commands[0].line == "ls -l 'lib cudnn (copy).so.8'"
    (plain,) = part_causes({"dlerror_reason": "damaged-file", "library_file": "libcudnn_ops_infer.so.8"})
    assert plain.tell.commands[0].line == "ls -l libcudnn_ops_infer.so.8"
