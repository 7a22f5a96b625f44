"""NCCL's result is a summary of the step that failed (ncclInternalError, "invalid usage", "remote
process exited"); NCCL's WARN line, or the "Last error:" PyTorch appends from ncclGetLastError,
names that step. Beside such a line the status alone is not explained: the line's own pattern is
the explanation, first. Without one, the status is explained as before."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()

PYTORCH_SUMMARY = (
    "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
    "internal error - please report this issue to the NCCL developers, NCCL version 2.23.4\n"
    "ncclInternalError: Internal check failed.\n"
    "Last error:\n"
)


def _ids(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text))]


@pytest.mark.parametrize(
    "reason, pattern",
    [
        ("Bootstrap : no socket interface found", "nccl-no-socket-interface"),
        ("[rank3]: Bootstrap: no socket interface found", "nccl-no-socket-interface"),
        ("NET/Socket : no interface found", "nccl-no-socket-interface"),
        ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000", "nccl-duplicate-gpu"),
    ],
)
def test_the_line_that_names_the_step_explains_the_summary(reason, pattern):
    ids = _ids(PYTORCH_SUMMARY + reason + "\n")
    assert ids[0] == pattern and "nccl-status" not in ids


@pytest.mark.parametrize(
    "text",
    [
        PYTORCH_SUMMARY,
        PYTORCH_SUMMARY + "NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n",  # an ordinary INFO line names no failure
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.18.1",
    ],
)
def test_a_summary_alone_is_still_explained(text):
    assert "nccl-status" in _ids(text)
