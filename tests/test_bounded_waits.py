"""Waits with a bound whatever the other side does: a hanging interpreter, a library whose load
hangs, and the doctor's --timeout over both."""

from __future__ import annotations

import sys
import time

import pytest

from envcheck.probes.libraries import subprocess_load_tester


@pytest.fixture
def hanging_python(tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nsleep 600\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the interpreter")
def test_a_hanging_interpreter_is_bounded_by_the_doctors_timeout(cli, hanging_python):
    started = time.monotonic()
    result = cli("doctor", "--quick", "--python", hanging_python, "--timeout", "2")
    assert time.monotonic() - started < 30
    assert result.code == 2 and "did not answer within 2 s" in result.err


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script as the interpreter")
def test_a_library_load_that_hangs_is_given_up_on_and_named(tmp_path):
    tester = tmp_path / "python"
    tester.write_text('#!/bin/sh\necho \'{"index": 0, "trying": true}\'\nsleep 600\n')
    tester.chmod(0o755)
    started = time.monotonic()
    results = subprocess_load_tester(str(tester), "unused.py", {}, timeout=1.0)([{"path": "/opt/cuda/libcudart.so.12"}])
    assert time.monotonic() - started < 30
    assert results[0] == {"loads": False, "load_error": "loading this library did not finish in time"}
