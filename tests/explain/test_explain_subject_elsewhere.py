"""A generic line of a tool that serves many programs names no program itself: dkms prints "Bad
return status for module build on kernel: <kernel> (<arch>)" for whichever module it built, and
names the module in the lines around it (dkms.in's do_build: "Consult
$dkms_tree/$module/$module_version/build/make.log for more information."; Void's kernel hook:
"Building DKMS module '<module>' for kernel-<version>... FAILED!"; dpkg: "error processing package
<module>-dkms"). A pattern's ``subject_elsewhere`` reads that subject: where the input names one that
is not the stack's, the generic line is that program's and is explained only if the input shows the
stack. A lone line, or one beside the NVIDIA module's own lines, is still explained.

The logs are written here from dkms' and dpkg's formats, not taken from any thread."""

from __future__ import annotations

import pytest

from envcheck.explain import PatternsError, load_patterns
from envcheck.explain.regexes import compile_regex

CATALOGUE = load_patterns()
FAILED = "Error! Bad return status for module build on kernel: 6.8.0-45-generic (x86_64)"


@pytest.mark.parametrize(
    "log",
    [
        # dkms 3.x after a Wi-Fi driver's failed make
        "Building module(s)....(bad exit status: 2)\n"
        f"{FAILED}\n"
        "Consult /var/lib/dkms/rtl88x2bu/5.8.7.1/build/make.log for more information.",
        # dkms 2.x, another module, an older kernel
        "Building module:\ncleaning build area...\n'make' -j8 KVER=5.4.0-150-generic....(bad exit status: 2)\n"
        "Error! Bad return status for module build on kernel: 5.4.0-150-generic (x86_64)\n"
        "Consult /var/lib/dkms/v4l2loopback/0.12.3/build/make.log for more information.",
        # dpkg names the package of the module that failed
        f"{FAILED}\n"
        "dpkg: error processing package virtualbox-dkms (--configure):\n"
        " installed virtualbox-dkms package post-installation script subprocess returned error exit status 10",
        # apport's note on an unsupported kernel, for another module's build
        "ERROR (dkms apport): kernel package linux-headers-6.8.0-45-generic is not supported\n"
        "Consult /var/lib/dkms/zfs/2.2.2/build/make.log for more information.",
    ],
)
def test_another_modules_failed_dkms_build_is_not_the_nvidia_drivers(log):
    assert CATALOGUE.scan_text(log).ids == []


@pytest.mark.parametrize(
    "log",
    [
        FAILED,  # alone: what was asked about, most often after installing the NVIDIA driver
        f"{FAILED}\nConsult /var/lib/dkms/nvidia/550.120/build/make.log for more information.",
        "dpkg: error processing package nvidia-dkms-550 (--configure):\n" + FAILED,
        # two modules failed, the NVIDIA one among them
        f"{FAILED}\nConsult /var/lib/dkms/rtl8821ce/v5.5.2/build/make.log for more information.\n"
        f"{FAILED}\nConsult /var/lib/dkms/nvidia/550.120/build/make.log for more information.",
        # another module's build in a log that shows the NVIDIA driver's stack
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
        "latest NVIDIA driver is installed and running.\n"
        f"{FAILED}\nConsult /var/lib/dkms/rtl8821ce/v5.5.2/build/make.log for more information.",
    ],
)
def test_the_nvidia_modules_failed_build_is_still_explained(log):
    assert "dkms-build-failed" in CATALOGUE.scan_text(log).ids


def test_every_subject_regex_keeps_the_catalogues_rules():
    # bounded repeats, nothing nested: held to the same rules as the patterns' own regexes
    sources = [p.subject_elsewhere.pattern for p in CATALOGUE.patterns if p.subject_elsewhere is not None]
    assert sources
    for source in sources:
        compile_regex(source, True)


def test_a_catalogue_with_a_bad_subject_regex_is_refused(tmp_path):
    text = CATALOGUE.path.read_text(encoding="utf-8")
    old = "    subject_elsewhere: '/var/lib/dkms/"
    assert old in text
    path = tmp_path / "patterns.yaml"
    path.write_text(text.replace(old, "    subject_elsewhere: '/var/lib/(?:dkms/)*", 1), encoding="utf-8")
    with pytest.raises(PatternsError, match="subject_elsewhere"):
        load_patterns(path)


# A program that calls the CUDA runtime itself prints cudaGetErrorString's text in its own words and
# names itself around it: glibc's failed assert ("<program>: <file>:<line>: <function>: Assertion
# `<expr>' failed."), the Windows C runtime's ("Assertion failed: <expr>, file <file>, line <n>"),
# darknet's check_error_extended ("CUDA status Error: file: <file> : <function>() : line: <n>").
@pytest.mark.parametrize(
    "log",
    [
        "   12 conv    256  3 x 3 / 1\n CUDA Error: an illegal memory access was encountered\n"
        "detector: ./src/cuda.c:36: check_error: Assertion `0' failed.\nAborted (core dumped)",
        "CUDA Error: out of memory\nAssertion failed: 0, file D:\\yolo\\src\\utils.c, line 256",
        "CUDA status Error: file: ./src/dark_cuda.c : cuda_make_array() : line: 373 : build time: Jan  1 2021 - 10:00:00\n"
        " CUDA Error: out of memory",
    ],
)
def test_a_cuda_status_in_another_programs_words_is_that_programs(log):
    assert CATALOGUE.scan_text(log).ids == []


@pytest.mark.parametrize(
    "log",
    [
        "CUDA Error: out of memory",  # alone: what was asked about
        "RuntimeError: CUDA error: out of memory",
        # glibc asserting inside the Python that runs the stack is not another program
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "python3.11: ../nptl/pthread_mutex_lock.c:81: __pthread_mutex_lock: Assertion `mutex->__data.__owner == 0' failed.",
        # an assertion in the stack's own sources (PyTorch's CUDA kernels) is the stack's
        "RuntimeError: CUDA error: out of memory\n"
        "prog: /pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward: Assertion `t >= 0' failed.",
        # another program's assertion in a log that shows TensorFlow's traceback
        '  File "/usr/lib/python3/dist-packages/tensorflow/python/eager/execute.py", line 53, in quick_execute\n'
        "RuntimeError: CUDA error: out of memory\nhelper: src/main.c:12: main: Assertion `x' failed.",
    ],
)
def test_a_cuda_status_of_the_stack_is_still_explained(log):
    assert CATALOGUE.scan_text(log).ids
