"""Every file a user names is read with bounds: regular files (or '-') only, a size cap per kind,
numbers range-checked where they are read. Each case is one line on stderr and exit 2, soon.

Run as real subprocesses with a memory limit and a timeout: a reader without bounds would block
on a FIFO or fill memory from /dev/zero, and must fail here, not hang the suite.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from envcheck.facts import Facts, to_dict
from tests.conftest import REPO, CliResult

MEMORY_LIMIT = 2 * 1024**3
MATRIX = REPO / "compat_matrix.yaml"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_bounded(*args: str, input: bytes | None = None, timeout: float = 60) -> CliResult:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "envcheck", *args],
            capture_output=True,
            env=env,
            cwd=str(REPO),
            input=input if input is not None else b"",
            timeout=timeout,
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"envcheck {' '.join(args)} did not finish within {timeout} s")
    return CliResult(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))


def assert_one_line_exit_2(result: CliResult, *fragments: str) -> None:
    assert result.code == 2, result
    assert result.err.startswith("envcheck: error: ") and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in result.err, (fragment, result.err)


# What names each kind of file, in each command that reads it.
READERS = {
    "facts": lambda path: ("doctor", "--facts", path),
    "plan-facts": lambda path: ("plan", "--facts", path),
    "explain-facts": lambda path: ("explain", "--facts", path, "text"),
    "matrix": lambda path: ("matrix", "--matrix", path, "cuda", "12.2"),
    "doctor-matrix": lambda path: ("doctor", "--quick", "--matrix", path),
    "patterns": lambda path: ("explain", "--no-probe", "--patterns", path, "text"),
    "log": lambda path: ("explain", "--no-probe", "--file", path),
}


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_fifo_nobody_writes_to_is_refused_at_once(reader, fifo):
    assert_one_line_exit_2(run_bounded(*READERS[reader](fifo), timeout=30), fifo, "is a pipe (FIFO)")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("reader", ["facts", "matrix", "patterns", "log"])
def test_a_device_is_refused_not_read_until_memory_runs_out(reader, device):
    assert_one_line_exit_2(run_bounded(*READERS[reader](device)), device, "is a device")


@pytest.mark.parametrize("reader", ["facts", "matrix", "patterns"])
def test_an_oversize_file_is_refused_before_it_is_read(reader, tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(17 * 1024 * 1024)  # sparse: no disk used
    limit = "8 MiB" if reader == "patterns" else "16 MiB"
    assert_one_line_exit_2(run_bounded(*READERS[reader](str(big))), str(big), f"more than {limit}")


def test_a_snapshot_on_standard_input(tmp_path):
    snapshot = json.dumps(to_dict(Facts())).encode()
    result = run_bounded("doctor", "--facts", "-", "--json", input=snapshot)
    assert result.code in (0, 1), result
    assert json.loads(result.out)["command"] == "doctor"


def test_standard_input_past_the_cap_is_refused():
    result = run_bounded("doctor", "--facts", "-", input=b" " * (16 * 1024 * 1024 + 1))
    assert_one_line_exit_2(result, "standard input", "more than 16 MiB")


def test_an_empty_log_path_is_not_a_directory(cli):
    result = cli("explain", "--no-probe", "--file", "")
    assert_one_line_exit_2(result, "needs a path, got an empty string")
    assert "directory" not in result.err


# --- numbers --------------------------------------------------------------------------------------

HUGE = "1" + "0" * 5000  # past Python's 4,300-digit limit for int()


def _snapshot_text(tmp_path, edit) -> str:
    data = to_dict(Facts())
    data["nvml"]["gpus"] = [{"index": 0, "name": "Tesla V100"}]
    text = edit(json.dumps(data))
    path = tmp_path / "facts.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t.replace('"index": 0', f'"index": {HUGE}'), "facts.nvml.gpus[0].index"),
        (lambda t: t.replace('"index": 0', f'"index": {2**63}'), "facts.nvml.gpus[0].index"),
        (lambda t: t.replace('"index": 0', f'"index": {-(2**63) - 1}'), "facts.nvml.gpus[0].index"),
        (lambda t: t.replace('"bits": 0', '"bits": ' + "9" * 400), "facts.python.bits"),
        (lambda t: t.replace('"seconds": 0.0', '"seconds": ' + "9" * 400, 1), "facts.python.seconds"),
        (lambda t: t.replace('"seconds": 0.0', '"seconds": 1e400', 1), "facts.python.seconds"),
        (lambda t: t.replace('"seconds": 0.0', '"seconds": NaN', 1), "facts.python.seconds"),
        (lambda t: t.replace('"seconds": 0.0', '"seconds": -Infinity', 1), "facts.python.seconds"),
        (lambda t: t.replace('"seconds": 0.0', '"seconds": 1e300', 1), "facts.python.seconds"),
    ],
)
def test_numbers_out_of_range_in_a_snapshot_name_their_field(cli, tmp_path, edit, field):
    path = _snapshot_text(tmp_path, edit)
    assert_one_line_exit_2(cli("doctor", "--facts", path), path, field, "out of range")


def test_a_huge_number_where_a_string_belongs_is_a_wrong_type(cli, tmp_path):
    path = _snapshot_text(tmp_path, lambda t: t.replace('"name": "Tesla V100"', f'"name": {HUGE}'))
    result = cli("doctor", "--facts", path)
    assert_one_line_exit_2(result, "facts.nvml.gpus[0].name")
    assert len(result.err) < 400


def _matrix_with(tmp_path, old: str, new: str) -> str:
    text = MATRIX.read_text()
    assert old in text
    path = tmp_path / "matrix.yaml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("schema: 2", f"schema: {HUGE}", "schema: expected a decimal integer of at most 18 digits"),
        ("schema: 2", "schema: 0x2", "schema: expected a decimal integer"),
        ('- version: "7.0"', f'- version: "7.{HUGE}"', "expected a version like"),
    ],
)
def test_numbers_out_of_range_in_a_matrix_are_line_numbered(cli, tmp_path, old, new, expected):
    path = _matrix_with(tmp_path, old, new)
    result = cli("matrix", "--matrix", path, "cuda", "12.2")
    assert_one_line_exit_2(result, path, ", line ", expected)
    assert len(result.err) < 400


def test_a_deeply_nested_matrix_is_refused(cli, tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text(
        "schema: 2\nsources:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(60)) + "  " * 61 + "x: 1\n"
    )
    assert_one_line_exit_2(cli("matrix", "--matrix", str(path), "cuda", "12.2"), "nested deeper than 32 levels")


def test_a_deeply_nested_flow_matrix_is_refused(cli, tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("schema: 2\nsources: " + "[" * 5000 + "]" * 5000 + "\n")
    assert_one_line_exit_2(cli("matrix", "--matrix", str(path), "cuda", "12.2"), str(path))


def test_aliases_in_a_matrix_are_refused(cli, tmp_path):
    lines = ["schema: 2", "a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 12):  # a "billion laughs": 9**12 nodes behind a few hundred bytes
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}" if i > 1 else "*a"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert_one_line_exit_2(cli("matrix", "--matrix", str(path), "cuda", "12.2"), "aliases", "not allowed")


@pytest.mark.parametrize(
    "args",
    [
        ("plan", "--os", "linux", "--cpu", "--tf", HUGE),
        ("plan", "--os", "linux", "--cpu", "--tf", "2." + HUGE),
        ("plan", "--os", "linux", "--cpu", "--python", "3." + HUGE),
        ("plan", "--os", "linux", "--driver", "550." + HUGE),
        ("plan", "--os", "linux", "--compute-capability", "8." + HUGE),
        ("matrix", "tf", HUGE),
        ("matrix", "tf", "2." + HUGE),
        ("matrix", "cuda", HUGE),
        ("matrix", "cuda", "12." + HUGE),
    ],
)
def test_huge_numbers_on_the_command_line_are_bad_input(cli, args):
    result = cli(*args)
    assert_one_line_exit_2(result)
    assert len(result.err) < 400


# --- the command line itself ----------------------------------------------------------------------


def test_traceback_is_accepted_after_a_nested_query(cli):
    assert cli("matrix", "cuda", "12.2", "--traceback").code == 0
    result = run_bounded("matrix", "cuda", "X", "--traceback")
    assert "unrecognized arguments" not in result.err
    assert "Traceback" in result.err and "is not a CUDA version" in result.err


@pytest.mark.parametrize(
    "args",
    [
        ("doctor", "--facts", "no\nsuch.json"),
        ("doctor", "--select", "EC\nX"),
        ("matrix", "cuda", "12\n2"),
        ("plan", "--os", "linux", "--python", "3.\n11"),
        ("doctor", "--facts", "esc\x1b[31mape.json"),
    ],
)
def test_a_value_with_a_newline_or_an_escape_is_echoed_on_one_line(cli, args):
    result = cli(*args)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert "\x1b" not in result.err
