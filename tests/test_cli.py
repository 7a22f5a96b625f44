"""The CLI contract: exit codes, one-line errors without tracebacks, the entry points."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from envcheck import __version__
from envcheck.facts import Facts, PythonFacts, to_dict
from tests.conftest import REPO, run_envcheck


def write_snapshot(path, facts: Facts) -> str:
    path.write_text(json.dumps(to_dict(facts)))
    return str(path)


def test_version_and_module_entry_point():
    result = run_envcheck("--version")
    assert result.code == 0
    assert result.out.strip() == f"envcheck {__version__}"


def test_no_command_prints_help_and_exits_2(cli):
    result = cli()
    assert result.code == 2
    assert "doctor" in result.out and "plan" in result.out


def test_help_lists_every_command(capsys):
    from envcheck.cli import COMMANDS, main

    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)


@pytest.mark.parametrize(
    "args, message",
    [
        (("doctor", "--no-such-flag"), "doctor: unrecognized argument: --no-such-flag"),
        (("frobnicate",), "unknown command 'frobnicate'"),
        (("doctor", "--fail-on", "sometimes"), "--fail-on: unknown choice 'sometimes'"),
        (("doctor", "--tf-timeout", "-3"), "must be a positive number"),
        (("doctor", "--timeout", "inf"), "must be a positive number"),
        (("doctor", "--no-redact"), "--no-redact only applies to --markdown"),
    ],
)
def test_usage_errors_are_one_line_exit_2(cli, args, message):
    result = cli(*args)
    assert result.code == 2
    assert message in result.err
    assert result.err.count("\n") == 1
    assert "Traceback" not in result.err


def test_bad_facts_files_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    wrong_shape = tmp_path / "list.json"
    wrong_shape.write_text("[1, 2]")
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**to_dict(Facts()), "schema_version": 99}))
    for path, message in [
        (bad, "not valid JSON"),
        (wrong_shape, "expected a JSON object"),
        (future, "newer than this envcheck"),
        (tmp_path / "missing.json", "no such file"),
        (tmp_path, "is a directory"),
    ]:
        result = cli("doctor", "--facts", str(path))
        assert result.code == 2, (path, result)
        assert message in result.err
        assert result.err.startswith("envcheck: error: ")
        assert result.err.count("\n") == 1


def test_python_that_is_not_python_exits_2(cli, tmp_path):
    not_exec = tmp_path / "python"
    not_exec.write_text("hello")
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\necho not python\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    failing = tmp_path / "failing-python"
    failing.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    failing.chmod(failing.stat().st_mode | stat.S_IXUSR)
    for path, message in [
        (tmp_path / "nope", "no such file"),
        (not_exec, "not executable"),
        (script, "not a Python interpreter"),
        (failing, "not a working Python 3.6+ interpreter (boom)"),
        (tmp_path, "is a directory with no bin/python"),
    ]:
        result = cli("doctor", "--quick", "--python", str(path))
        assert result.code == 2, (path, result)
        assert message in result.err


def test_facts_and_python_together_is_a_usage_error(cli, tmp_path):
    snapshot = write_snapshot(tmp_path / "f.json", Facts())
    result = cli("doctor", "--facts", snapshot, "--python", sys.executable)
    assert result.code == 2
    assert "cannot be used together" in result.err


def test_error_finding_gives_exit_1_and_fail_on_changes_it(cli, tmp_path):
    snapshot = write_snapshot(tmp_path / "f.json", Facts(python=PythonFacts(version="3.7.9", bits=32)))
    assert cli("doctor", "--facts", snapshot).code == 1
    assert cli("doctor", "--facts", snapshot, "--fail-on", "never").code == 0
    report = cli("doctor", "--facts", snapshot, "--json").json()
    assert report["exit_code"] == 1
    assert "EC-PY-001" in [f["id"] for f in report["findings"]]
    ignored = cli("doctor", "--facts", snapshot, "--json", "--ignore", "ec-py-001").json()
    assert "EC-PY-001" not in [f["id"] for f in ignored["findings"]]


def test_internal_crash_exit_3_with_hint(cli, monkeypatch):
    import envcheck.commands.doctor as doctor

    def boom(args):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(doctor, "build_report", boom)
    result = cli("doctor", "--quick")
    assert result.code == 3
    assert "internal error: ZeroDivisionError: simulated bug" in result.err
    assert "--traceback" in result.err
    with pytest.raises(ZeroDivisionError):
        cli("doctor", "--quick", "--traceback")


def test_save_facts_writes_a_snapshot_that_replays(cli, tmp_path):
    target = tmp_path / "snap.json"
    first = cli("doctor", "--quick", "--json", "--save-facts", str(target))
    assert target.exists()
    replay = cli("doctor", "--json", "--facts", str(target))
    a, b = first.json(), replay.json()
    assert a["findings"] == b["findings"]
    assert a["verdict"] == b["verdict"]
    assert a["facts"] == b["facts"]


def test_console_script_is_declared():
    text = (REPO / "pyproject.toml").read_text()
    assert 'envcheck = "envcheck.cli:main"' in text


def test_quick_doctor_does_not_import_tensorflow():
    code = (
        "import sys; from envcheck.cli import main; import io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()): main(['doctor', '--quick', '--json'])\n"
        "print('tensorflow' in sys.modules)"
    )
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(REPO))
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr


@pytest.mark.parametrize(
    "args, needs",
    [
        (("validate",), "envcheck validate needs numpy, tensorflow"),
        (("validate", "--train"), "envcheck validate --train needs numpy, tensorflow, pillow, which are not installed"),
        (("train", "--synthetic", "--epochs", "1"), "envcheck train needs numpy, tensorflow, pillow"),
    ],
)
def test_commands_that_need_tensorflow_say_so_without_it(args, needs):
    """As in envcheck's core install (no TensorFlow): one line naming the extra, exit 2."""
    import subprocess

    # A None entry in sys.modules is how Python marks a module as not importable.
    code = (
        "import sys\n"
        "for name in ('numpy', 'tensorflow', 'PIL'): sys.modules[name] = None\n"
        "from envcheck.cli import main\n"
        f"sys.exit(main({list(args)!r}))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(REPO))
    assert out.returncode == 2, out.stderr
    assert needs in out.stderr and "-m pip install numpy tensorflow" in out.stderr  # this interpreter's pip
    assert "Traceback" not in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (("doctor", "--facts", ""), "--facts needs a path"),
        (("doctor", "--python", " "), "--python needs a path"),
        (("doctor", "--matrix", ""), "--matrix needs a path"),
        (("doctor", "--save-facts", ""), "--save-facts needs a path"),
        (("doctor", "--yes"), "--yes only applies to --apply"),
        (("doctor", "--select", "EC-ZZZ"), "--select EC-ZZZ: no rule id starts with it"),
        (("doctor", "--ignore", "ec-lib,EC-FOO"), "--ignore EC-FOO: no rule id starts with it"),
    ],
)
def test_empty_paths_stray_flags_and_unknown_rule_ids_exit_2(cli, monkeypatch, args, message):
    import envcheck.commands.doctor as doctor

    def must_not_probe(args):
        raise AssertionError("probed before the usage check")

    monkeypatch.setattr(doctor, "build_report", must_not_probe)
    result = cli(*args)
    assert result.code == 2, result
    assert message in result.err and result.err.count("\n") == 1


def test_apply_conflicts_are_refused_before_probing(cli, monkeypatch, tmp_path):
    import envcheck.commands.doctor as doctor

    def must_not_probe(args):
        raise AssertionError("probed before the usage check")

    monkeypatch.setattr(doctor, "build_report", must_not_probe)
    assert "--json" in cli("doctor", "--apply", "cpu", "--json").err
    snapshot = write_snapshot(tmp_path / "f.json", Facts())
    result = cli("doctor", "--apply", "gpu", "--facts", snapshot)
    assert result.code == 2 and "--facts" in result.err


def test_known_rule_prefixes_are_accepted(cli, tmp_path):
    snapshot = write_snapshot(tmp_path / "f.json", Facts())
    for flag in ("--select", "--ignore"):
        assert cli("doctor", "--facts", snapshot, flag, "ec-gpu,EC-LIB-00,EC-INT").code in (0, 1)


def test_save_facts_writes_through_a_symlink_and_into_a_pipe(cli, tmp_path):
    target = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    snapshot = write_snapshot(tmp_path / "f.json", Facts())
    assert cli("doctor", "--facts", snapshot, "--save-facts", str(link)).code in (0, 1)
    assert link.is_symlink() and json.loads(target.read_text())["schema_version"] == 2

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import threading

    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert cli("doctor", "--facts", snapshot, "--save-facts", str(fifo)).code in (0, 1)
    reader.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a pipe, not replaced by a file
    assert json.loads(got[0])["schema_version"] == 2


def test_report_survives_an_output_encoding_without_its_characters(tmp_path):
    facts = Facts(python=PythonFacts(executable="/home/jos\u00e9/venv/bin/python", version="3.11.7", bits=64))
    snapshot = write_snapshot(tmp_path / "f.json", facts)
    result = run_envcheck("doctor", "--facts", snapshot, env={"PYTHONIOENCODING": "ascii"})
    assert result.code in (0, 1), result.err
    assert "/home/jos?/venv/bin/python" in result.out and "Verdict:" in result.out


def test_json_on_an_output_encoding_without_its_characters_stays_lossless(tmp_path):
    facts = Facts(python=PythonFacts(executable="/home/jos\u00e9/venv/bin/python", version="3.11.7", bits=64))
    snapshot = write_snapshot(tmp_path / "f.json", facts)
    result = run_envcheck("doctor", "--facts", snapshot, "--json", env={"PYTHONIOENCODING": "ascii"})
    assert result.code in (0, 1), result.err
    assert result.json()["facts"]["python"]["executable"] == "/home/jos\u00e9/venv/bin/python"


@pytest.mark.parametrize(
    "args, message",
    [
        (("doctor", "--jsn"), "doctor: unrecognized argument: --jsn (did you mean --json?)"),
        (("doctr",), "unknown command 'doctr' (did you mean doctor?)"),
        (("matrix", "tf", "2.15", "--jsn"), "matrix tf: unrecognized argument: --jsn (did you mean --json?)"),
        (("plan", "--os", "windwos"), "plan: --os: unknown choice 'windwos' (did you mean windows?)"),
    ],
)
def test_a_mistyped_word_names_its_command_and_the_nearest_spelling(cli, args, message):
    result = cli(*args)
    assert result.code == 2 and result.err == f"envcheck: error: {message}\n"
    assert "envcheck: error: envcheck:" not in result.err


def test_doctor_help_names_the_traceback_flag_and_the_exit_codes(cli, capsys):
    with pytest.raises(SystemExit):
        cli("doctor", "--help")
    out = capsys.readouterr().out
    assert "--traceback" in out and "exit status:" in out and "--require-gpu" in out


def test_ctrl_c_that_native_code_turned_into_another_error_is_still_an_interruption(monkeypatch, capsys):
    """TensorFlow's runtime can hand back a SystemError for the KeyboardInterrupt it was given."""
    import envcheck.commands.matrix as matrix_command
    from envcheck import cli, interrupts

    def run(args):
        interrupts._state["interrupted"] = True  # what the handler records when Ctrl-C arrives
        raise SystemError("Objects/listobject.c:338: bad argument to internal function")

    monkeypatch.setattr(matrix_command, "run", run)
    assert cli.main(["matrix", "cuda", "12.2"]) == 130
    assert capsys.readouterr().err == "envcheck: interrupted\n"


def test_the_same_error_without_ctrl_c_is_an_internal_error(monkeypatch, capsys):
    import envcheck.commands.matrix as matrix_command
    from envcheck import cli

    def run(args):
        raise SystemError("bad argument to internal function")

    monkeypatch.setattr(matrix_command, "run", run)
    assert cli.main(["matrix", "cuda", "12.2"]) == 3
    assert "internal error: SystemError" in capsys.readouterr().err


_SWALLOWED = """
import gc, os, signal, sys, time
from envcheck import interrupts

interrupts.install()


class Finalized:
    def __del__(self):  # Ctrl-C arrives while Python runs a finalizer (as in TensorFlow's)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)


Finalized()
gc.collect()
print("went on", flush=True)
try:
    interrupts.check()
except KeyboardInterrupt:
    print("stopped at the check", flush=True)
    sys.exit(130)
"""


def test_a_ctrl_c_python_swallows_in_a_finalizer_still_stops_at_the_next_check(tmp_path):
    """Python only prints an exception raised in __del__: the interrupt is remembered, raised at
    the next safe point (the trainer checks after every step), and no traceback is printed."""
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _SWALLOWED], capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo)},
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stdout.splitlines() == ["went on", "stopped at the check"]
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr


def test_the_check_raises_nothing_without_ctrl_c():
    from envcheck import interrupts

    interrupts.install()
    interrupts.check()  # no Ctrl-C: nothing raised
