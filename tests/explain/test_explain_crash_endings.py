"""A log that ends in a crash report: what a shell prints alone once its child died of a signal
("Killed", "Segmentation fault (core dumped)", macOS's "Killed: 9"), the kernel's out-of-memory
killer (mm/oom_kill.c), and a signal's or a Windows exception's name or code pasted alone
(signal.h, ntstatus.h; exit status 128+N). Such a report is a word or a number alone on its line,
so the input's last lines are read for it (``at_end``) rather than with a needle."""

from __future__ import annotations

import pytest

from envcheck.explain import explain, load_patterns

CATALOGUE = load_patterns()
CRASH = "process-crash-status"
# A TensorFlow start-up line: the input shows the stack, so a crash in it is TensorFlow's process's.
TF = "I tensorflow/core/common_runtime/gpu/gpu_device.cc:1525] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 10800 MB memory\n"
# Another program's log: nothing of the stack in it.
OTHER = "make[2]: Entering directory '/src/build'\ng++ -O2 -c main.cpp -o main.o\n"


def _crashes(text: str):
    return [e for e in explain(CATALOGUE.scan_text(text)) if e.id == CRASH]


def _status(text: str) -> str:
    (crash,) = _crashes(text)
    return crash.variables["status_name"]


@pytest.mark.parametrize(
    "line, name",
    [
        ("Killed", "SIGKILL"),
        ("Killed: 9", "SIGKILL"),  # macOS's bash
        ("Segmentation fault (core dumped)", "SIGSEGV"),
        ("Segmentation fault: 11", "SIGSEGV"),
        ("Aborted (core dumped)", "SIGABRT"),
        ("Abort trap: 6", "SIGABRT"),
        ("Bus error (core dumped)", "SIGBUS"),
        ("Terminated", "SIGTERM"),
        ("SIGSEGV", "SIGSEGV"),
        ("SIGBUS", "SIGBUS"),
        ("sigabrt", "SIGABRT"),
        ("STATUS_ACCESS_VIOLATION", "STATUS_ACCESS_VIOLATION"),
        ("STATUS_STACK_BUFFER_OVERRUN", "STATUS_STACK_BUFFER_OVERRUN"),
        ("0xC0000409", "STATUS_STACK_BUFFER_OVERRUN"),
        ("-1073741819", "STATUS_ACCESS_VIOLATION"),
        ("3221225477", "STATUS_ACCESS_VIOLATION"),
        ("exit code -1073740791", "STATUS_STACK_BUFFER_OVERRUN"),
        ("-1073741819 (0xC0000005)", "STATUS_ACCESS_VIOLATION"),
        ("Process finished with exit code 134 (interrupted by signal 6: SIGABRT)", "SIGABRT"),
    ],
)
def test_a_report_alone_and_at_the_end_of_a_tensorflow_log(line, name):
    assert _status(line) == name  # pasted alone: it is what was asked about
    assert _status(TF + line) == name
    assert _status(TF + line + "\n\n") == name  # blank lines after it


def test_a_prompt_after_the_report_is_no_matter():
    assert _status(TF + "Killed\n(venv) me@box:~/project$ ") == "SIGKILL"


@pytest.mark.parametrize("line", ["Killed", "SIGSEGV", "-1073741819", "Segmentation fault (core dumped)"])
def test_another_programs_crash_stays_unexplained(line):
    # a log that shows nothing of the stack: its crash is that program's
    assert _crashes(OTHER + line) == []


@pytest.mark.parametrize("line", ["Killed", "SIGSEGV", "-1073741819", "0xC0000409"])
def test_a_bare_word_in_the_middle_of_a_log_is_not_read(line):
    # only the last lines are where a shell's report stands; earlier, a bare word or number is any
    # line (ntstatus.h's names are read anywhere: no other text spells them)
    text = TF + line + "\nEpoch 2/10\nstep 100 loss 0.3\nstep 200 loss 0.2\n"
    assert _crashes(text) == []


@pytest.mark.parametrize(
    "line",
    [
        "Killed 3 workers after the test run timed out",
        "Killed by user request",
        "SIGSEGV handler installed",
        "signal.signal(signal.SIGSEGV, handler)",
        "STATUS_PENDING",
        "STATUS_OK",
        "1234567890",
        "-1",
        "0x00000001",
        "Aborted!",
        "Terminated workers: 3",
    ],
)
def test_look_alikes_at_the_end_stay_quiet(line):
    assert _crashes(TF + line) == []
    assert _crashes(line) == []


def test_the_oom_killer_points_at_host_memory():
    crash = _crashes(TF + "Killed")[0]
    first = crash.causes[0]
    assert first.id == "process-killed-out-of-memory"
    assert "not the GPU's" in first.text


@pytest.mark.parametrize(
    "line",
    [
        "[  687.293876] python invoked oom-killer: gfp_mask=0x24280ca, order=0, oom_score_adj=0",
        "[ 1525.675890] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=python,pid=3986,uid=1000",
        "[ 1525.676012] Out of memory: Killed process 3986 (python) total-vm:30845012kB, anon-rss:15092456kB",
        "[ 1525.701224] oom_reaper: reaped process 3986 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        "Memory cgroup out of memory: Killed process 4711 (python) total-vm:8123456kB",
    ],
)
def test_dmesg_out_of_memory_lines(line):
    assert _status(TF + line) == "SIGKILL"


@pytest.mark.parametrize(
    "line",
    [
        "vm.oom_kill_allocating_task = 0",
        "oom_score_adj: 0",
        "Out of memory for the cache, retrying",
    ],
)
def test_dmesg_look_alikes(line):
    assert _crashes(TF + line + "\nstep 1\nstep 2\nstep 3") == []


@pytest.mark.parametrize(
    "line, name",
    [
        ("*** SIGSEGV received at time=1700000000 on cpu 3 ***", "SIGSEGV"),
        ("*** SIGABRT received at time=1700000000 on cpu 0 ***", "SIGABRT"),
        ("Signal 6 (SIGABRT) received by PID 4711", "SIGABRT"),
        ("Fatal signal 11 (SIGSEGV) at 0x0000000000000000", "SIGSEGV"),
        ("Error code: STATUS_ACCESS_VIOLATION", "STATUS_ACCESS_VIOLATION"),
    ],
)
def test_a_name_inside_a_line_anywhere_in_the_log(line, name):
    assert _status(TF + line + "\nstep 1\nstep 2\nstep 3") == name


def test_the_report_is_counted_once():
    (crash,) = _crashes(TF + "Segmentation fault (core dumped)")
    assert crash.count == 1


def test_a_long_log_ending_in_killed():
    steps = "".join(f"Epoch 1/5 step {i}/5000 - loss: 0.{i % 97:02d}\n" for i in range(20000))
    (crash,) = _crashes(TF + steps + "Killed\n")
    assert crash.first_line == 20002
    # read in small chunks, the last lines are the same
    from io import BytesIO

    result = CATALOGUE.scan(BytesIO((TF + steps + "Killed\n").encode()), chunk_bytes=4096)
    assert [o.first_line for o in result.occurrences if o.pattern.id == CRASH] == [20002]


@pytest.mark.parametrize(
    "line, name",
    [
        ("RuntimeError: DataLoader worker (pid 4711) is killed by signal: Killed. ", "SIGKILL"),
        (
            "RuntimeError: DataLoader worker (pid 4711) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.",
            "SIGBUS",
        ),
        ("  exitcode  : -9 (pid: 2345)", "SIGKILL"),
        ("  exitcode  : -6 (pid: 2345)", "SIGABRT"),
    ],
)
def test_pytorchs_worker_reports(line, name):
    assert _status(TF + line + "\nstep 1\nstep 2\nstep 3") == name


@pytest.mark.parametrize(
    "line",
    ["  exitcode  : 1 (pid: 2345)", "Started worker process (pid: 123)", "worker 3 is killed by signal: unknown"],
)
def test_pytorchs_ordinary_worker_lines(line):
    assert _crashes(TF + line + "\nstep 1\nstep 2\nstep 3") == []
