"""How a crashed process is reported (issue 20): the exception code a Windows process exits with
(NTSTATUS) and the signal a POSIX process dies of, read in every spelling into cuda_status.yaml's
tables, each given its meaning where no pattern names the message, its causes ranked by the rest
of the log; ordinary exit statuses and look-alikes stay quiet."""

from __future__ import annotations

import pytest
import yaml

from envcheck.explain import explain, load_patterns
from envcheck.explain.exit_codes import exit_status_value, ntstatus_value
from envcheck.explain.parts import read_parts
from envcheck.explain.status_causes import load_status_causes
from envcheck.explain.statuses import STATUS_FILE, load_statuses, status_variables
from envcheck.resources import data_file

CATALOGUE = load_patterns()
RAW = yaml.safe_load(data_file(STATUS_FILE).read_text(encoding="utf-8"))
CRASH_TABLES = {t["enum"]: t for t in RAW["tables"] if t["enum"] in ("NTSTATUS", "POSIX signals")}


def _explained(text: str):
    return explain(CATALOGUE.scan_text(text))


# A crash is any program's: explained where the input shows TensorFlow or the CUDA stack.
IN_THE_STACK = "I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is optimized to use available CPU instructions.\n"


def _crash(text: str):
    found = [e for e in _explained(IN_THE_STACK + text) if e.id == "process-crash-status"]
    assert len(found) == 1, [e.id for e in _explained(text)]
    return found[0]


# --- the data -------------------------------------------------------------------------------------


def test_both_tables_are_there_with_sources():
    assert set(CRASH_TABLES) == {"NTSTATUS", "POSIX signals"}
    for table in CRASH_TABLES.values():
        assert table["header"] and table["versions"] and table["library"]
        assert any(str(s).startswith("https://") for s in table["sources"])


@pytest.mark.parametrize("enum", ["NTSTATUS", "POSIX signals"])
def test_every_value_has_name_number_and_meaning(enum):
    names = set()
    for value in CRASH_TABLES[enum]["values"]:
        assert isinstance(value["value"], int) and value["value"] > 0
        assert value["name"] not in names
        names.add(value["name"])
        assert len(value["meaning"]) > 20
        if enum == "NTSTATUS":
            assert value["name"].startswith("STATUS_") and 0x80000000 <= value["value"] < 1 << 32
        else:
            assert value["name"].startswith("SIG") and 0 < value["value"] < 32


def test_documented_numbers():
    tables = load_statuses()
    expected = {
        "STATUS_ACCESS_VIOLATION": 0xC0000005,
        "STATUS_ILLEGAL_INSTRUCTION": 0xC000001D,
        "STATUS_DLL_NOT_FOUND": 0xC0000135,
        "STATUS_ENTRYPOINT_NOT_FOUND": 0xC0000139,
        "STATUS_DLL_INIT_FAILED": 0xC0000142,
        "STATUS_HEAP_CORRUPTION": 0xC0000374,
        "STATUS_STACK_OVERFLOW": 0xC00000FD,
        "STATUS_STACK_BUFFER_OVERRUN": 0xC0000409,
        "STATUS_NO_MEMORY": 0xC0000017,
        "SIGILL": 4,
        "SIGABRT": 6,
        "SIGBUS": 7,
        "SIGKILL": 9,
        "SIGSEGV": 11,
    }
    for name, number in expected.items():
        (status,) = tables.by_name(name)
        assert status.value == number


def test_crash_statuses_with_causes_use_known_causes():
    causes = load_status_causes()
    for name in (
        "SIGILL",
        "SIGSEGV",
        "SIGABRT",
        "SIGBUS",
        "SIGKILL",
        "STATUS_ACCESS_VIOLATION",
        "STATUS_DLL_NOT_FOUND",
    ):
        assert causes[name], name


def test_cause_ids_agree_with_the_catalogue():
    """A table answer and a pattern name one cause alike."""
    catalogue_ids = {c.id for p in CATALOGUE.patterns for c in p.causes}
    for name in ("cpu-without-avx", "rosetta-x86-python", "mixed-library-versions"):
        assert name in catalogue_ids
    (sigill,) = [c for c in load_status_causes()["SIGILL"] if c.template.id == "cpu-without-avx"]
    assert "AVX" in sigill.template.text


# --- the parser: every spelling of a value maps to it ---------------------------------------------


@pytest.mark.parametrize("spelling", ["0xC0000005", "0xc0000005", "3221225477", "-1073741819"])
def test_ntstatus_spellings(spelling):
    assert ntstatus_value(spelling) == 0xC0000005


@pytest.mark.parametrize("spelling", ["0", "1", "126", "-1", "0x00000001", "twelve"])
def test_not_an_ntstatus(spelling):
    assert ntstatus_value(spelling) is None


@pytest.mark.parametrize(
    "spelling, expected",
    [
        ("139", ("POSIX signals", 11)),
        ("137", ("POSIX signals", 9)),
        ("134", ("POSIX signals", 6)),
        ("132", ("POSIX signals", 4)),
        ("135", ("POSIX signals", 7)),
        ("-11", ("POSIX signals", 11)),
        ("-1073740791", ("NTSTATUS", 0xC0000409)),
        ("3221226505", ("NTSTATUS", 0xC0000409)),
        ("0", None),
        ("1", None),
        ("2", None),
        ("127", None),
        ("128", None),
        ("255", None),
    ],
)
def test_exit_status_spellings(spelling, expected):
    assert exit_status_value(spelling) == expected


@pytest.mark.parametrize(
    "captures, name",
    [
        ({"exit_status": "-1073741819"}, "STATUS_ACCESS_VIOLATION"),
        ({"exit_status": "3221225477"}, "STATUS_ACCESS_VIOLATION"),
        ({"ntstatus": "0xC0000005"}, "STATUS_ACCESS_VIOLATION"),
        ({"ntstatus_text": "access violation"}, "STATUS_ACCESS_VIOLATION"),
        ({"ntstatus": "0xC000001D"}, "STATUS_ILLEGAL_INSTRUCTION"),
        ({"signal_number": "11"}, "SIGSEGV"),
        ({"signal_name": "SIGSEGV"}, "SIGSEGV"),
        ({"signal_name": "segv"}, "SIGSEGV"),
        ({"signal_text": "Segmentation fault"}, "SIGSEGV"),
        ({"signal_text": "segmentation fault"}, "SIGSEGV"),
        ({"exit_status": "139"}, "SIGSEGV"),
        ({"signal_text": "Killed"}, "SIGKILL"),
        ({"oom_killed": "OOMKilled"}, "SIGKILL"),
        ({"signal_text": "abort"}, "SIGABRT"),
    ],
)
def test_every_spelling_names_the_value(captures, name):
    assert status_variables(captures)["status_name"] == name


def test_the_value_is_shown_in_every_spelling():
    shown = status_variables({"ntstatus": "0xC0000409"})["status_value"]
    assert "0xC0000409" in shown and "3221226505" in shown and "-1073740791" in shown
    assert status_variables({"exit_status": "137"})["status_value"] == "signal 9, exit status 137"


# --- explained where no pattern names the message -------------------------------------------------


@pytest.mark.parametrize(
    "text, name",
    [
        ("Process finished with exit code -1073741819 (0xC0000005)", "STATUS_ACCESS_VIOLATION"),
        ("The process exited with code 3221225477", "STATUS_ACCESS_VIOLATION"),
        ("Process finished with exit code -1073740791 (0xC0000409)", "STATUS_STACK_BUFFER_OVERRUN"),
        ("Process finished with exit code -1073741515 (0xC0000135)", "STATUS_DLL_NOT_FOUND"),
        ("Process finished with exit code -1073741511 (0xC0000139)", "STATUS_ENTRYPOINT_NOT_FOUND"),
        ("Process finished with exit code -1073741502 (0xC0000142)", "STATUS_DLL_INIT_FAILED"),
        ("Process finished with exit code -1073740940 (0xC0000374)", "STATUS_HEAP_CORRUPTION"),
        ("Process finished with exit code -1073741571 (0xC00000FD)", "STATUS_STACK_OVERFLOW"),
        ("Windows fatal exception: access violation", "STATUS_ACCESS_VIOLATION"),
        ("Windows fatal exception: code 0xc0000374", "STATUS_HEAP_CORRUPTION"),
        ("Segmentation fault (core dumped)", "SIGSEGV"),
        ("Fatal Python error: Segmentation fault", "SIGSEGV"),
        ("Fatal Python error: Aborted", "SIGABRT"),
        ("Aborted (core dumped)", "SIGABRT"),
        ("Bus error (core dumped)", "SIGBUS"),
        ("Floating point exception (core dumped)", "SIGFPE"),
        ("./run.sh: line 3: 4711 Killed                  python train.py", "SIGKILL"),
        ("command terminated with exit code 137", "SIGKILL"),
        ('{"lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}', "SIGKILL"),
        ("Faulting application name: python.exe, Exception code: 0xc0000409", "STATUS_STACK_BUFFER_OVERRUN"),
        ("Out of memory: Killed process 4711 (python) total-vm:81234567kB", "SIGKILL"),
        ("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)", "SIGSEGV"),
        ("zsh: segmentation fault  python train.py", "SIGSEGV"),
        ("subprocess.CalledProcessError: Command '['python', 'x.py']' died with <Signals.SIGBUS: 7>.", "SIGBUS"),
    ],
)
def test_meaning_given_where_no_pattern_names_it(text, name):
    explanation = _crash(text)
    assert explanation.variables["status_name"] == name
    assert not explanation.harmless  # a crash is never harmless
    meaning = load_statuses().by_name(name)[0].meaning
    assert meaning in explanation.meaning


def test_a_crash_alone_gets_the_general_causes():
    explanation = _crash("Segmentation fault (core dumped)")
    ids = [c.id for c in explanation.causes]
    assert "native-code-crash" in ids
    assert ids[0] != "cudnn-version-mismatch"  # no cuDNN in the log: not a guess about it


def test_an_existing_pattern_keeps_its_message():
    """SIGILL's own pattern explains the shells' words for it; the table does not repeat it."""
    ids = [e.id for e in _explained("Illegal instruction (core dumped)")]
    assert ids == ["illegal-instruction"]


# --- causes ranked by the rest of the log ---------------------------------------------------------


def test_illegal_instruction_code_points_at_avx():
    # Windows' STATUS_ILLEGAL_INSTRUCTION is the illegal-instruction message: a CPU without AVX first
    (explanation,) = [
        e
        for e in _explained("Process finished with exit code -1073741795 (0xC000001D)")
        if e.id == "illegal-instruction"
    ]
    assert "AVX" in explanation.cause and explanation.variables.get("status_name") == "STATUS_ILLEGAL_INSTRUCTION"


def test_sigill_on_a_mac_points_at_rosetta():
    died = "subprocess.CalledProcessError: Command 'python x.py' died with <Signals.SIGILL: 4>."
    on_a_mac = _crash('Traceback (most recent call last):\n  File "/Users/me/x.py", line 1\n' + died)
    assert on_a_mac.variables["log_os"] == "macos"
    assert on_a_mac.causes[0].id == "rosetta-x86-python"
    on_linux = _crash('Traceback (most recent call last):\n  File "/home/me/x.py", line 1\n' + died)
    ids = [c.id for c in on_linux.causes]
    assert ids[0] == "cpu-without-avx" and "rosetta-x86-python" not in ids


def test_bus_error_in_docker_points_at_dev_shm():
    in_docker = [
        c.id for c in _crash("$ docker run --gpus all my-image python train.py\nBus error (core dumped)").causes
    ]
    assert in_docker[0] == "dev-shm-too-small"
    on_a_mac = [c.id for c in _crash("zsh: bus error  python /Users/me/train.py").causes]
    assert "dev-shm-too-small" not in on_a_mac  # no /dev/shm on macOS
    assert on_a_mac[0] == "metal-plugin-mismatch"


def test_exit_137_in_a_container_points_at_its_memory_limit():
    alone = [c.id for c in _crash("command terminated with exit code 137").causes]
    in_pod = [c.id for c in _crash("kubectl logs trainer-0\ncommand terminated with exit code 137").causes]
    assert in_pod[0] == "container-memory-limit"
    assert alone[0] == "process-killed-out-of-memory" and alone[-1] == "container-memory-limit"


def test_a_crash_after_cudnn_loads_points_at_its_version():
    log = (
        "I tensorflow/stream_executor/cuda/cuda_dnn.cc:384] Loaded cuDNN version 8600\nSegmentation fault (core dumped)"
    )
    explanation = _crash(log)
    assert explanation.variables["log_crash_after"] == "cudnn"
    assert explanation.causes[0].id == "cudnn-version-mismatch"
    cublas = "I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully opened dynamic library libcublas.so.11\n"
    assert _crash(cublas + "Segmentation fault (core dumped)").causes[0].id == "mixed-library-versions"
    # the library loaded after the crash is no lead
    later = _crash("Segmentation fault (core dumped)\nLoaded cuDNN version 8600")
    assert "log_crash_after" not in later.variables


def test_commands_follow_the_platform():
    windows = _crash("C:\\Users\\me> python train.py\nProcess finished with exit code -1073741515 (0xC0000135)")
    shells = {command.shell for cause in windows.causes if cause.tell for command in cause.tell.commands}
    assert shells == {"powershell"}
    mac = _crash("Fatal Python error: Bus error\nzsh: bus error  python /Users/me/x.py")
    assert all("/proc/" not in c.line for cause in mac.causes if cause.tell for c in cause.tell.commands)


# --- look-alikes that stay quiet ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Process finished with exit code 0",
        "Process finished with exit code 1",
        "exited with code 2",
        "Killed 3 workers after the test run timed out",
        'File "/home/user/project/train.py", line 137, in <module>',
        "Training aborted by the user",
        "Aborted!",
        "The memory at 0x7ffd5c0a1b20 was read",
        "Epoch 137/200 - loss: 0.31",
    ],
)
def test_look_alikes_stay_quiet(text):
    assert [e.id for e in _explained(text) if e.id == "process-crash-status"] == []


def test_parts_read_a_crash_in_any_message():
    parts = read_parts("Process finished with exit code -1073741819 (0xC0000005)")
    assert parts.get("status_name") == "STATUS_ACCESS_VIOLATION"
    assert read_parts("Process finished with exit code 1").get("status_name") is None


@pytest.mark.parametrize(
    "text",
    [
        "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)",
        "Segmentation fault (core dumped)",
        "Process finished with exit code -1073741819 (0xC0000005)",
        "Fatal Python error: Aborted",
    ],
)
def test_a_crash_in_another_programs_log_is_that_programs(text):
    # In a log that shows nothing of the stack it is no sign of a GPU setup problem: nothing is
    # explained, while the same line in a TensorFlow log is, and so is the line pasted alone (it
    # is what was asked about).
    other = "make[2]: Entering directory '/src/build'\ng++ -O2 -c main.cpp -o main.o\n" + text
    assert [e.id for e in _explained(other)] == []
    assert _crash(text).id == "process-crash-status"
    assert [e.id for e in _explained(text)] == ["process-crash-status"]


@pytest.mark.parametrize(
    "text", ["Process finished with exit code -1073741795 (0xC000001D)", "The process exited with exit code 3221225501"]
)
def test_windows_spelling_of_an_illegal_instruction_is_the_illegal_instruction_message(text):
    assert "illegal-instruction" in [e.id for e in _explained(text)]
