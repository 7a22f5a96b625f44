"""A cryptocurrency miner's log (``log_miner``): the algorithm it mines (ethash, kawpow ...), its
pool's stratum address, the DAG it builds in the GPU's memory for the epoch, its hash rate, T-Rex's
"TREX: " prefix. The miner's "out of memory" is a DAG larger than the card, none of a framework's
reasons, so it is not explained as one; an NVIDIA setup fault the miner meets (a driver older than
its CUDA runtime) is still explained. Written from the miners' formats with other numbers than any
thread showed."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.explain.context import read_context

CATALOGUE = load_patterns()

MINER_MARKS = [
    "cu 08:01:02 cuda-0   Generating DAG + Light : 4.51 GB",
    "[12:00:00] INFO - Device 0: DAG - Building, EPOCH 512",
    "GPU1: Allocating DAG (4.52) GB; good for epoch up to #520",
    "Eth: Connecting to ethash pool eu1.example.org:4444",
    "t-rex.exe -a kawpow -o stratum+tcp://rvn.example.org:3333 -u WALLET.rig1",
    "GPU0: 31.24 MH/s, 64C 70%",
    "20240102 03:04:05 TREX: Can't find nonce with device [ID=1, GPU #1], cuda exception in [initialize_ethash_cache, 85]",
]
OUT_OF_MEMORY = [
    "CUDA Error: out of memory (err_no=2)",
    "cuda exception: CUDA_ERROR_OUT_OF_MEMORY",
    "RuntimeError: CUDA error: out of memory",
]


def _acted(text: str) -> list[str]:
    return [e.id for e in explain(CATALOGUE.scan_text(text)) if not e.harmless]


@pytest.mark.parametrize("mark", MINER_MARKS)
def test_a_miners_marks_make_a_miners_log(mark):
    assert read_context(mark).get("log_miner")


@pytest.mark.parametrize("line", OUT_OF_MEMORY)
@pytest.mark.parametrize("mark", MINER_MARKS)
def test_a_miners_out_of_memory_is_its_dag(mark, line):
    assert _acted(line), "the line alone is explained"
    assert _acted(f"{mark}\n{line}") == []


def test_a_driver_fault_in_a_miners_log_is_still_explained():
    text = MINER_MARKS[0] + "\nCUDA driver version is insufficient for CUDA runtime version"
    assert _acted(text)


@pytest.mark.parametrize(
    "lookalike",
    [
        # Airflow's DAG, a word, a variable: no miner's DAG
        "INFO - Running DAG train_resnet on executor",
        "the stratum of the sample (stratified split)",
        "hash rate limit reached for API key",
        "nonce=3f2a in the request header",
        "TREX_HOME=/opt/trex",
    ],
)
def test_look_alikes_are_no_miners_log(lookalike):
    assert not read_context(lookalike).get("log_miner")
    assert _acted(f"{lookalike}\n{OUT_OF_MEMORY[2]}")
