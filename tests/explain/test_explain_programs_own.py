"""Messages that name the CUDA stack's words but are not the GPU setup's, read from the source
that prints them.

A device-side assert: the CUDA runtime's cudaErrorAssert and the driver's CUDA_ERROR_ASSERT (710)
are "an assert triggered in device code during kernel execution" (CUDA runtime and driver API
references): the program's own kernel checking its own data (PyTorch's index and label checks).
Its printed text was already left alone; its name and number now are too, however the program
prints them (TensorFlow's event poll, a runtime error with its number, NCCL's CUDACHECK, a
program's own check of the driver's call). Its neighbours in the tables are still explained.

AMD's RCCL is NCCL's source turned into HIP and built with NCCL's debug.cc: its lines keep NCCL's
format and words ("NCCL WARN Cuda failure 'invalid argument'"), but the source file they name is
RCCL's own, a path through its rccl or hipify folder. Such a line is a ROCm GPU's, not NVIDIA's
NCCL's; NCCL's own lines (any path of NVIDIA's build, or none) are still explained.

The lines are written here from those formats (the RCCL paths as its builds name them), not
copied from a thread."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.parts import another_programs_line
from envcheck.explain.statuses import load_statuses, resolve

CATALOGUE = load_patterns()


def _ids(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text))]


@pytest.mark.parametrize(
    "text",
    [
        "CUDA_ERROR_ASSERT",
        "cudaErrorAssert: device-side assert triggered",
        "2021-03-02 11:04:09.101010: E tensorflow/stream_executor/cuda/cuda_event.cc:29] Error polling for event"
        " status: failed to query event: CUDA_ERROR_ASSERT: device-side assert triggered",
        "E0302 11:04:09.101010 4242 cuda_event.cc:40] Error polling for event status: failed to query event:"
        " CUDA_ERROR_ASSERT: device-side assert triggered",
        "RuntimeError: cuda runtime error (710) : device-side assert triggered at /pytorch/aten/src/THC/THCGeneral.cpp:383",
        "CUDA error (710)",
        "node7:311:340 [2] enqueue.cc:1212 NCCL WARN Cuda failure 710 'device-side assert triggered'",
        "CU: cuStreamSynchronize(stream) = 710 (CUDA_ERROR_ASSERT): device-side assert triggered",
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_ASSERT: device-side assert triggered",
    ],
)
def test_a_device_side_assert_is_the_programs_own_by_name_and_number(text):
    assert _ids(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "cudaErrorTooManyPeers",
        "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        "RuntimeError: cuda runtime error (700) : an illegal memory access was encountered",
        "node7:311:340 [2] enqueue.cc:1212 NCCL WARN Cuda failure 700 'an illegal memory access was encountered'",
    ],
)
def test_the_asserts_neighbours_are_still_explained(text):
    assert _ids(text), text


def test_only_the_assert_pair_is_the_programs_own_and_resolve_names_none_of_it():
    tables = load_statuses()
    own = {s.name for s in tables.statuses if s.programs_own}
    assert own == {"CUDA_ERROR_ASSERT", "cudaErrorAssert"}
    assert resolve({"status": "CUDA_ERROR_ASSERT"}, tables) is None
    assert resolve({"cudart_number": "710"}, tables) is None
    assert resolve({"cudart_text": "device-side assert triggered"}, tables) is None
    assert resolve({"status": "CUDA_ERROR_TOO_MANY_PEERS"}, tables).value == 711


RCCL_LINES = [
    # a distribution's package build (Arch's debug path), CUDACHECK's words kept
    "host:19402:19419 [0] /usr/src/debug/rccl/build/hipify/src/transport/p2p.cc:237 NCCL WARN Cuda failure"
    " 'invalid argument'",
    # AMD's packages: the long build path, then rccl/hipify
    "node:461:502 [1] /longer_pathname_so_that_rpms_can_support_packaging_the_debug_info_for_all_os_profiles/src/out/"
    "ubuntu-22.04/22.04/build/rccl/hipify/src/transport/p2p.cc:241 NCCL WARN Cuda failure 'out of memory'",
    # an older RCCL built inside another project (.cpp sources, no hipify folder)
    "g1:1263985:1263985 [0] /long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/build/src/"
    "transport/p2p.cpp:240 NCCL WARN Cuda failure 'invalid device ordinal'",
    # a source folder named with its version, a newer NCCL's numbered wording
    "box:12:34 [3] /opt/src/rccl-6.2.4/src/init.cc:1750 NCCL WARN Cuda failure 2 'out of memory'",
    # a Windows build's path
    r"ws:9:10 [0] C:\build\rccl\hipify\src\transport\p2p.cc:237 NCCL WARN Cuda failure 'invalid argument'",
    # the INFO trace line names the file after the level
    "node [0] NCCL INFO /app/rccl/build/release/hipify/src/init.cc:2491 Cuda failure 'invalid argument'",
]


@pytest.mark.parametrize("line", RCCL_LINES)
def test_rccls_own_lines_are_not_nvidias_nccl(line):
    assert another_programs_line(line)
    assert _ids(line) == []


@pytest.mark.parametrize(
    "line",
    [
        "node3:7101:7130 [1] init.cc:421 NCCL WARN Cuda failure 801 'operation not supported'",
        "gpu-node:12:34 [0] /dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/transport/p2p.cc:237 NCCL WARN Cuda"
        " failure 'invalid argument'",
        "box:12:34 [3] /opt/src/nccl-2.18.3-1/src/init.cc:1750 NCCL WARN Cuda failure 2 'out of memory'",
        # a folder that only begins like hipify is not RCCL's build
        "box:12:34 [3] /home/me/hipify-notes/nccl/src/init.cc:1750 NCCL WARN Cuda failure 2 'out of memory'",
    ],
)
def test_nvidias_nccl_lines_are_still_explained(line):
    assert not another_programs_line(line)
    assert "nccl-cuda-failure" in _ids(line)


def test_an_rccl_line_frames_nothing_in_a_log():
    # RCCL's failure beside NCCL's own line: NCCL's is explained, RCCL's adds nothing
    log = "\n".join(
        [RCCL_LINES[0], "node3:7101:7130 [1] init.cc:421 NCCL WARN Cuda failure 801 'operation not supported'"]
    )
    explanations = explain(CATALOGUE.scan_text(log))
    assert [e.id for e in explanations] == ["nccl-cuda-failure"]
    assert explanations[0].line_numbers == (2,)
