"""``envcheck explain`` as a user runs it: inputs, outputs, exit codes, errors without tracebacks."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from envcheck.explain import explain, load_patterns
from envcheck.facts import (
    OK,
    Distribution,
    DriverFacts,
    Facts,
    LibrariesFacts,
    NvmlFacts,
    NvmlGpu,
    PackagesFacts,
    PciDevice,
    PciFacts,
    PlatformFacts,
    PythonFacts,
    to_dict,
)
from envcheck.render import SCHEMA_VERSION
from tests.conftest import FIXTURES, run_envcheck

CATALOGUE = load_patterns()

LOGS = FIXTURES / "logs"
SETUP_POST = (
    "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a "
    "directory that is named in your %PATH% environment variable. Download and install CUDA 10.0 from this "
    "URL: https://developer.nvidia.com/cuda-toolkit-archive"
)


def setup_post_machine(tmp_path) -> str:
    """The setup post's Windows machine as a snapshot: Python 3.7, tensorflow-gpu 1.13.1, GTX 1060, 417.35."""
    facts = Facts(
        python=PythonFacts(version="3.7.9", bits=64, executable=r"C:\Users\ada\Anaconda3\envs\tf-gpu\python.exe"),
        platform=PlatformFacts(os="windows", system="Windows"),
        packages=PackagesFacts(distributions=(Distribution(name="tensorflow-gpu", version="1.13.1"),)),
        pci=PciFacts(
            status=OK,
            devices=(
                PciDevice(
                    address="0000:01:00.0",
                    vendor_id="0x10de",
                    device_id="0x1c03",
                    class_code="0x030000",
                    name="GeForce GTX 1060 6GB",
                ),
            ),
        ),
        driver=DriverFacts(status="skipped"),
        nvml=NvmlFacts(
            status=OK,
            driver_version="417.35",
            gpus=(NvmlGpu(index=0, name="GeForce GTX 1060 6GB", compute_capability="6.1"),),
        ),
        libraries=LibrariesFacts(status=OK, search_path=(r"C:\Windows\system32",)),
    )
    path = tmp_path / "setup_post_machine.json"
    path.write_text(json.dumps(to_dict(facts)))
    return str(path)


def test_setup_post_message_with_its_machine_snapshot(cli, tmp_path):
    result = cli("explain", "--facts", setup_post_machine(tmp_path), SETUP_POST)
    assert result.code == 0, result.err
    out = result.out
    assert "[1] CUDA runtime cudart64_100.dll not found (this TensorFlow needs CUDA 10.0)" in out
    assert "error · EC-LIB-001 · line 1" in out
    assert "envcheck doctor (EC-LIB-001): cudart64_100.dll (CUDA 10.0 runtime) is missing" in " ".join(out.split())
    assert "https://developer.nvidia.com/cuda-10.0-download-archive" in out
    assert "\n      where.exe cudart64_100.dll\n" in out  # a command pastes as printed: no prompt before it
    assert "(bash)" not in out and "export " not in out  # a Windows machine gets its own shell's commands
    assert "the snapshot" in out


def test_argument_words_are_joined(cli):
    result = cli("explain", "--no-probe", "failed", "call", "to", "cuInit:", "CUDA_ERROR_NO_DEVICE:", "no", "device")
    assert result.code == 0
    assert "CUDA found no GPU (CUDA_ERROR_NO_DEVICE)" in result.out
    assert "the argument" in result.out


def test_file_with_several_errors_and_harmless_noise(cli):
    result = cli("explain", "--no-probe", "--file", str(LOGS / "linux_tf24_missing_cudnn.log"))
    assert result.code == 0
    out = result.out
    assert "7 known messages in 22 lines of" in out and "(2 to act on, 5 harmless)" in out
    assert out.index("cuDNN library libcudnn.so.8 could not be loaded") < out.index("Harmless:")
    assert out.index("Harmless:") < out.index("NUMA node information missing")
    assert out.index("Harmless:") < out.index("TensorFlow found GPU")  # the line that shows the GPU exists


def test_hide_harmless(cli):
    result = cli("explain", "--no-probe", "--hide-harmless", "--file", str(LOGS / "linux_tf24_missing_cudnn.log"))
    assert "NUMA" not in result.out
    assert "5 harmless messages not shown" in result.out


def test_json_output(cli):
    result = cli("explain", "--no-probe", "--json", "--file", str(LOGS / "tf221_cpu_machine_import.log"))
    assert result.code == 0
    data = result.json()
    assert data["schema_version"] == SCHEMA_VERSION and data["command"] == "explain"
    assert data["found"] == 4 and data["to_act_on"] == 1 and data["harmless"] == 3
    assert data["lines"] == 9 and data["exit_code"] == 0
    assert data["machine"] == {"probed": False, "origin": None, "os": None}
    first = data["explanations"][0]
    assert first["id"] == "cuinit-no-driver"
    assert set(first) >= {
        "title",
        "harmless",
        "meaning",
        "cause",
        "fix",
        "rule_ids",
        "count",
        "first_line",
        "excerpt",
        "on_this_machine",
    }
    assert first["rule_ids"] == ["EC-GPU-002", "EC-GPU-003", "EC-DRV-004", "EC-GPU-001"]
    assert first["fix"]["commands"][0] == {"shell": "bash", "line": "nvidia-smi"}


def test_json_with_snapshot_carries_machine_notes(cli, tmp_path):
    data = cli("explain", "--json", "--facts", setup_post_machine(tmp_path), SETUP_POST).json()
    assert data["machine"]["probed"] and data["machine"]["os"] == "windows"
    notes = data["explanations"][0]["on_this_machine"]
    assert notes[0]["url"] == "https://developer.nvidia.com/cuda-10.0-download-archive"
    assert any(c["shell"] == "powershell" for n in notes for c in n["commands"])


def test_unknown_text_exits_1_and_suggests_doctor(cli):
    result = cli("explain", "--no-probe", "Epoch 1/10 - loss: 0.52")
    assert result.code == 1
    assert "no known TensorFlow, CUDA or driver message in 1 line of the argument" in result.out
    assert "envcheck doctor" in result.out
    # what the shell's quoting did to an argument, and the way round it
    assert "`envcheck explain -`" in " ".join(result.out.split())


def test_unknown_text_on_standard_input_gets_no_quoting_hint():
    piped = run_envcheck("explain", "--no-probe", "-", input="Epoch 1/10 - loss: 0.52\n")
    assert piped.code == 1
    assert "no known TensorFlow" in piped.out and "explain -`" not in piped.out


def test_unknown_text_as_json_exits_1(cli):
    result = cli("explain", "--no-probe", "--json", "nothing here")
    assert result.code == 1
    assert result.json()["found"] == 0 and result.json()["exit_code"] == 1


def test_empty_file_exits_1(cli, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    result = cli("explain", "--no-probe", "--file", str(empty))
    assert result.code == 1
    assert "is empty; there is nothing to explain" in " ".join(result.out.split())  # wrapped to the width


def test_empty_argument_exits_1(cli):
    assert cli("explain", "--no-probe", "").code == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("explain",),
            "nothing to explain: give the error text as an argument, '-' to read standard input, or --file LOG",
        ),
        (("explain", "--file", "x.log", "text"), "not both"),
        (("explain", "--facts", "f.json", "--no-probe", "text"), "--facts replaces looking at this machine"),
        (("explain", "--python", "python3", "--no-probe", "text"), "--no-probe says not to look"),
        (("explain", "--file", "no/such/file.log"), "--file no/such/file.log: no such file"),
        (("explain", "--facts", "no/such/facts.json", "text"), "no/such/facts.json: no such file"),
        (("explain", "--no-probe", "--matrix", "no/such/matrix.yaml", "text"), "no/such/matrix.yaml: cannot read"),
    ],
)
def test_usage_errors_are_one_line_exit_2(cli, args, message):
    result = cli(*args)
    assert result.code == 2
    assert message in result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_directory_is_exit_2(cli, tmp_path):
    result = cli("explain", "--file", str(tmp_path))
    assert result.code == 2
    assert "is a directory" in result.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_is_exit_2(cli, tmp_path):
    locked = tmp_path / "locked.log"
    locked.write_text("x")
    locked.chmod(0)
    result = cli("explain", "--file", str(locked))
    assert result.code == 2 and "permission denied" in result.err


def test_gzip_log(cli, tmp_path):
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress((LOGS / "multi_gpu_keras.log").read_bytes()))
    result = cli("explain", "--no-probe", "--json", "--file", str(packed))
    assert [e["id"] for e in result.json()["explanations"]] == [
        "variable-already-exists",
        "model-not-picklable",
        "multi-gpu-model-removed",
    ]


def test_damaged_gzip_is_exit_2(cli, tmp_path):
    damaged = tmp_path / "train.log.gz"
    damaged.write_bytes(gzip.compress(os.urandom(100_000))[:2000])
    result = cli("explain", "--no-probe", "--file", str(damaged))
    assert result.code == 2 and "damaged gzip file" in result.err


def test_list_shows_every_pattern(cli):
    from envcheck.explain import load_patterns

    result = cli("explain", "--list")
    assert result.code == 0
    for pattern in load_patterns().patterns:
        assert f"\n{pattern.id}\n" in result.out
    assert "CUDA runtime cudart64_100.dll not found" in result.out


# Real processes: standard input, the probe of this machine, exit codes as the shell sees them.


def test_stdin_in_a_real_process():
    log = (LOGS / "tf221_cpu_machine_import.log").read_text()
    result = run_envcheck("explain", "-", input=log)
    assert result.code == 0, result.err
    assert "4 known messages in 9 lines of standard input" in result.out
    assert "failed call to cuInit" in result.out or "no NVIDIA driver" in result.out


def test_file_dash_reads_stdin():
    result = run_envcheck(
        "explain", "--no-probe", "--file", "-", input="ERROR: No matching distribution found for tensorflow\n"
    )
    assert result.code == 0 and "pip found no tensorflow for this Python" in result.out


def test_probing_this_machine_adds_its_facts():
    """This machine is looked at (quick probes, no TensorFlow import) and named in the output."""
    result = run_envcheck("explain", "--json", "ERROR: No matching distribution found for tensorflow")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["machine"]["probed"] is True
    assert data["machine"]["origin"].startswith("this machine (")


def test_unknown_text_in_a_real_process_exits_1():
    result = run_envcheck("explain", "--no-probe", "-", input="all fine\n")
    assert result.code == 1 and result.err == ""


def test_this_machines_own_log_is_judged_with_its_own_facts():
    """The log captured on a machine without an NVIDIA GPU, explained on this machine: whether the
    driver-less cuInit error is harmless follows what the probes see here."""
    from envcheck.facts import MISSING
    from envcheck.probes import ProbeOptions, collect

    facts = collect(ProbeOptions(quick=True))
    result = run_envcheck("explain", "--json", "--file", str(LOGS / "tf221_cpu_machine_import.log"))
    data = json.loads(result.out)
    (cuinit,) = [e for e in data["explanations"] if e["id"] == "cuinit-no-driver"]
    no_nvidia_here = facts.pci.status == MISSING and not facts.nvml.gpus
    if no_nvidia_here:
        assert cuinit["harmless"] is True and result.code == 0
        assert "no NVIDIA GPU" in cuinit["on_this_machine"][0]["text"]
    elif facts.pci.status == OK and facts.pci.devices:
        assert cuinit["harmless"] is False


def test_another_interpreter_can_be_looked_at():
    import sys

    result = run_envcheck(
        "explain", "--python", sys.executable, "--json", "ERROR: No matching distribution found for tensorflow"
    )
    assert result.code == 0, result.err
    assert json.loads(result.out)["machine"]["probed"] is True


def test_bad_python_is_exit_2():
    result = run_envcheck(
        "explain", "--python", "no/such/python", "ERROR: No matching distribution found for tensorflow"
    )
    assert result.code == 2 and "--python no/such/python: no such file" in result.err


def test_help_documents_the_exit_status(capsys):
    from envcheck.cli import main

    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "exit status: 0 when at least one known message was found, 1 when none was (or the input was empty), 2" in out
    )


def test_gzip_on_stdin_is_recognised_by_its_content():
    import subprocess
    import sys

    from tests.conftest import REPO

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    packed = gzip.compress((SETUP_POST + "\n").encode())
    proc = subprocess.run(
        [sys.executable, "-m", "envcheck", "explain", "--no-probe", "-"],
        input=packed,
        capture_output=True,
        env=env,
        cwd=str(REPO),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"cudart64_100.dll not found" in proc.stdout
    damaged = subprocess.run(
        [sys.executable, "-m", "envcheck", "explain", "--no-probe", "-"],
        input=packed[:20],
        capture_output=True,
        env=env,
        cwd=str(REPO),
        timeout=120,
    )
    assert damaged.returncode == 2 and b"damaged gzip" in damaged.stderr and b"Traceback" not in damaged.stderr


def test_catalogue_never_splits_a_rule_id_across_lines(cli):
    result = cli("explain", "--list")
    assert result.code == 0
    assert not any(line.rstrip().endswith("EC-") for line in result.out.splitlines())


def test_list_as_json_and_list_with_text_is_a_usage_error(cli):
    result = cli("explain", "--list", "--json")
    assert result.code == 0
    data = json.loads(result.out)
    assert len(data["messages"]) == len(load_patterns().patterns) and {"id", "title", "harmless", "rule_ids"} <= set(
        data["messages"][0]
    )
    result = cli("explain", "--list", "Illegal instruction")
    assert result.code == 2 and "--list" in result.err


def test_explain_text_fits_the_terminal_and_its_commands_paste_as_printed(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    message = (
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file"
    )
    result = cli("explain", "--no-probe", message)
    fixes = [
        f
        for e in explain(CATALOGUE.scan_text(message))
        for f in (e.fix, *(x for c in e.causes for x in (c.tell, c.fix)))
    ]
    commands = {c.line for f in fixes if f is not None for c in f.commands}
    for line in result.out.splitlines():
        if line.strip() in commands:
            assert not line.strip().startswith("$"), line  # a command is never preceded by a prompt
            continue  # and is never cut, whatever its length
        assert len(line) <= 60 or " " not in line.strip(), line  # prose wraps; a URL or a path stays whole
    assert any(line.strip() in commands for line in result.out.splitlines())


def test_a_confirmed_cause_that_makes_the_message_expected_makes_it_harmless(cli, tmp_path):
    # the header must not say "1 to act on" and then a confirmed cause "the message is then expected"
    # (a message this machine's TensorFlow prints: libcudart.so.12 for its CUDA 12 build)
    from envcheck.facts import load_facts

    snapshot = FIXTURES / "facts" / "this_machine.json"
    assert load_facts(str(snapshot)).pci.status in ("ok", "missing")
    result = cli("explain", "--facts", str(snapshot), "Could not load dynamic library 'libcudart.so.12'; dlerror: x")
    flat = " ".join(result.out.split())
    assert "(0 to act on, 1 harmless)" in flat and "confirmed on this machine" in flat


def test_a_pipe_without_arguments_is_read_as_standard_input():
    message = "Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file"
    piped = run_envcheck("explain", "--no-probe", "--json", input=message + "\n")
    assert piped.code == 0, piped.err
    document = json.loads(piped.out)
    assert document["found"] >= 1 and "standard input" in document["source"]


def test_a_terminal_without_arguments_is_still_the_usage_error():
    import subprocess
    import sys

    from tests.conftest import REPO

    primary, secondary = os.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "envcheck", "explain", "--no-probe"],
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(REPO),
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 2 and "nothing to explain" in proc.stderr


def test_a_message_pasted_into_a_terminal_ends_at_the_first_ctrl_d():
    # A terminal's Ctrl-D ends one read, not the stream: the text pasted before it is the input.
    import subprocess
    import sys

    from tests.conftest import REPO

    primary, secondary = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "envcheck", "explain", "--no-probe", "--json", "-"],
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        os.write(primary, b"Could not load dynamic library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open\n")
        os.write(primary, b"\x04")  # one Ctrl-D at the start of a line
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 0, err
    assert "reading standard input" in err
    assert json.loads(out)["found"] >= 1
