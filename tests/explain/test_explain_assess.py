"""`envcheck explain` checks a message's possible causes against the machine: a cause whose doctor
rule fires there is confirmed and comes first, one whose rule's link was checked without it firing
is ruled out and comes last, and one the machine cannot tell stays unmarked.

The machines are real Facts snapshots given to the CLI with --facts, as a user saves them."""

from __future__ import annotations

import json

from envcheck.cli import main
from envcheck.facts import to_json
from tests.explain.test_explain_context import machine

SETUP_POST = "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed"
CUDART_11 = (
    "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file"
)


def explain_json(tmp_path, capsys, facts, text) -> dict:
    snapshot = tmp_path / "facts.json"
    snapshot.write_text(to_json(facts))
    code = main(["explain", "--json", "--facts", str(snapshot), text])
    out = json.loads(capsys.readouterr().out)
    assert code == out["exit_code"]
    (explanation,) = out["explanations"]
    return {c["id"]: c.get("status") for c in explanation["causes"]}, [c["id"] for c in explanation["causes"]]


def test_setup_post_machine_confirms_missing_cuda_and_rules_out_no_gpu(tmp_path, capsys):
    facts = machine(
        os="windows", python="3.7.9", packages={"tensorflow-gpu": "1.13.1"}, gpus=("GeForce GTX 1060",), driver="417.35"
    )
    status, order = explain_json(tmp_path, capsys, facts, SETUP_POST)
    assert status["cuda-not-installed"] == "confirmed"
    assert order[0] in {cid for cid, s in status.items() if s == "confirmed"}


def test_a_machine_without_a_gpu_confirms_no_gpu_and_puts_it_first(tmp_path, capsys):
    facts = machine(os="linux", packages={"tensorflow": "2.4.1"})  # the bus read, no NVIDIA device
    status, order = explain_json(tmp_path, capsys, facts, CUDART_11)
    assert status["no-nvidia-gpu"] == "confirmed"
    assert order[0] == "no-nvidia-gpu"


def test_a_machine_with_a_gpu_rules_out_no_gpu_and_puts_it_last(tmp_path, capsys):
    facts = machine(
        os="linux", python="3.8.10", packages={"tensorflow": "2.4.1"}, gpus=("GeForce GTX 1080 Ti",), driver="460.32.03"
    )
    status, order = explain_json(tmp_path, capsys, facts, CUDART_11)
    assert status["no-nvidia-gpu"] == "ruled-out"
    assert order[-1] == "no-nvidia-gpu"
    assert status["cuda-not-installed"] == "confirmed"  # no CUDA library found: EC-LIB-001 fires


def test_causes_no_rule_can_check_stay_unmarked(tmp_path, capsys):
    facts = machine(os="linux", packages={"tensorflow": "2.4.1"}, gpus=("GeForce GTX 1080 Ti",), driver="460.32.03")
    status, _ = explain_json(tmp_path, capsys, facts, CUDART_11)
    assert status.get("python38-dll-search") is None and status.get("msstore-python") is None


def test_without_looking_at_a_machine_nothing_is_marked(capsys):
    code = main(["explain", "--json", "--no-probe", CUDART_11])
    (explanation,) = json.loads(capsys.readouterr().out)["explanations"]
    assert code == 0
    assert all(c.get("status") is None for c in explanation["causes"])


def _whole_json(tmp_path, capsys, facts, text) -> dict:
    snapshot = tmp_path / "facts.json"
    snapshot.write_text(to_json(facts))
    main(["explain", "--json", "--facts", str(snapshot), text])
    (explanation,) = json.loads(capsys.readouterr().out)["explanations"]
    return explanation


def test_a_cuda_message_from_another_tensorflow_is_not_judged_by_this_machine(tmp_path, capsys):
    """A CPU-only TensorFlow here never loads libcudart: the log came from elsewhere, so this
    machine's missing GPU confirms nothing and does not make the message harmless."""
    for packages in ({"tensorflow-cpu": "2.21.0"}, {"tensorflow": "2.21.0"}):  # a CPU build; CUDA 12, not 11.0
        explanation = _whole_json(tmp_path, capsys, machine(os="linux", packages=packages), CUDART_11)
        assert not any(c.get("status") for c in explanation["causes"]), (packages, explanation["causes"])
        assert explanation["harmless"] is False
        assert "another environment or machine" in " ".join(n["text"] for n in explanation["on_this_machine"])
    cpu_note = " ".join(
        n["text"]
        for n in _whole_json(tmp_path, capsys, machine(os="linux", packages={"tensorflow-cpu": "2.21.0"}), CUDART_11)[
            "on_this_machine"
        ]
    )
    assert "CPU-only build" in cpu_note and "built for CUDA" not in cpu_note


def test_a_cuda_message_this_tensorflow_prints_is_judged_here(tmp_path, capsys):
    """The same message with the TensorFlow that loads that file: the machine's facts decide."""
    explanation = _whole_json(tmp_path, capsys, machine(os="linux", packages={"tensorflow": "2.4.1"}), CUDART_11)
    assert any(c.get("status") == "confirmed" for c in explanation["causes"])
