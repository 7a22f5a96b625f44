"""Every command envcheck prints keeps a value taken from a machine as one literal word.

Folder names are generated to be hostile (spaces, quotes, $(...), backticks, ';', '#', newlines,
non-ASCII, PowerShell's typographic quotes) and the printed lines are run: bash gets only the
assignment lines, with an empty PATH, in an empty temporary folder, and must end up with the
folder as the variable's exact value and no file created. Injections use redirections (``>file``),
which need no program on PATH, so an injection that ran would leave a file behind.

PowerShell: when ``pwsh`` is on PATH the same lines are run there. It is not installable on this
project's machines (not in Debian's archive; the npm and NuGet routes download it from outside or
need the .NET SDK), so without it the PowerShell lines are checked against the language's own rule
for single-quoted strings: the string ends at any of ' U+2018 U+2019 U+201A U+201B, and two of
them in a row are one literal quote.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_budget import examples

from envcheck import shell
from envcheck.facts import Facts, LibraryCopy, PlatformFacts
from envcheck.machine import Machine
from envcheck.rules.library_fixes import add_to_loader_path
from envcheck.verdict import judge
from tests.rules import builders as b

BASH = shutil.which("bash")
PWSH = shutil.which("pwsh")
PS_QUOTES = "'\u2018\u2019\u201a\u201b"

# Fragments an attacker (or an unlucky folder name) would use; each injection makes a file.
HOSTILE = [
    "$(>pwned)",
    "`>pwned`",
    ";>pwned",
    "&>pwned",
    "|>pwned",
    "'$(>pwned)'",
    '"$(>pwned)"',
    "\n>pwned\n",
    "$(Set-Content pwned x)",
    "'; Set-Content pwned x; '",
    "\u2019; Set-Content pwned x; \u2019",
    "`$(Set-Content pwned x)",
    " ",
    "'",
    '"',
    "\\",
    "#",
    "$HOME",
    "${PATH}",
    "!",
    "*",
    "?",
    "~",
    "{a,b}",
    "(",
    ")",
    "<",
    "\t",
    "\u00e9",
    "\u4e2d",
    "\u2018",
    "\u201c",
    "--%",
    "@",
    ",",
    "/opt/cuda",
    "C:\\CUDA",
    "lib64",
    "-",
    "\x1b]52;c;dG91Y2g=\x07",  # OSC 52: a terminal would write this to the clipboard
    "\x1b[2J",
    "\x9b",
    "\u202e",
    "\u200b",
    "\r",
]
folders = st.one_of(
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=6).map("".join),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=20),
).filter(lambda d: "\x00" not in d)


def run_bash(line: str, variable: str, cwd) -> str:
    """Run one printed assignment line in bash with nothing on PATH; return the variable's value."""
    done = subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", line + f'\nprintf %s "${{{variable}}}"'],
        cwd=str(cwd),
        env={"PATH": ""},
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0, (line, done.stderr)
    return done.stdout.decode("utf-8", "surrogateescape")


def powershell_literal_value(text: str) -> tuple[str, str]:
    """Read one single-quoted PowerShell string at the start of ``text`` by the language's rule;
    return (its value, what follows it)."""
    assert text and text[0] in PS_QUOTES, text
    out, i = [], 1
    while i < len(text):
        c = text[i]
        if c in PS_QUOTES:
            if i + 1 < len(text) and text[i + 1] in PS_QUOTES:
                out.append(c)
                i += 2
                continue
            return "".join(out), text[i + 1 :]
        out.append(c)
        i += 1
    raise AssertionError(f"unterminated string: {text!r}")


@pytest.mark.skipif(BASH is None, reason="no bash")
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(folder=folders)
def test_bash_sees_a_hostile_folder_as_one_literal_word(folder, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bash")
    assert run_bash(shell.prepend_path("LD_LIBRARY_PATH", folder, shell.BASH), "LD_LIBRARY_PATH", cwd) == folder
    assert run_bash(shell.set_variable("CUDA_HOME", folder, shell.BASH), "CUDA_HOME", cwd) == folder
    machine = Machine(Facts(platform=PlatformFacts(system="Linux", os="linux")))
    fix = add_to_loader_path(machine, folder)
    assert fix.shell == "bash"
    assert run_bash(fix.line, "LD_LIBRARY_PATH", cwd) == folder
    assert not os.listdir(cwd), os.listdir(cwd)  # nothing ran


@pytest.mark.skipif(BASH is None, reason="no bash")
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(folder=folders | st.binary(min_size=1, max_size=12).map(lambda b: os.fsdecode(b.replace(b"\0", b"x"))))
def test_a_control_character_is_written_as_an_escape_that_bash_reads_back_exactly(folder, tmp_path_factory):
    """A printed line never holds a raw control character (a terminal would obey it), yet pasted
    it still names the folder byte for byte, undecodable bytes included."""
    from envcheck.printable import is_hidden

    line = shell.set_variable("CUDA_HOME", folder, shell.BASH)
    assert not any(is_hidden(c) for c in line), line
    cwd = tmp_path_factory.mktemp("ansi")
    assert os.fsencode(run_bash(line, "CUDA_HOME", cwd)) == os.fsencode(folder)
    assert not os.listdir(cwd)


@settings(max_examples=examples(300), deadline=None)
@given(folder=folders)
def test_powershell_reads_a_hostile_folder_as_one_literal_word(folder):
    for line, variable, value in (
        (shell.prepend_path("Path", folder, shell.POWERSHELL), "Path", folder + ";"),
        (shell.set_variable("CUDA_PATH", folder, shell.POWERSHELL), "CUDA_PATH", folder),
    ):
        head = f"$env:{variable} = "
        assert line.startswith(head)
        got, rest = powershell_literal_value(line[len(head) :])
        assert got == value
        assert rest in ("", f" + $env:{variable}"), rest
    word = shell.quote(folder, shell.POWERSHELL)
    if word != folder:
        assert powershell_literal_value(word) == (folder, "")


@pytest.mark.skipif(PWSH is None, reason="pwsh is not installed (not installable here: see the module docstring)")
@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(folder=folders)
def test_pwsh_itself_sees_a_hostile_folder_as_one_literal_word(
    folder, tmp_path_factory
):  # pragma: no cover - needs pwsh
    cwd = tmp_path_factory.mktemp("pwsh")
    line = shell.set_variable("ENVCHECK_TEST", folder, shell.POWERSHELL)
    done = subprocess.run(
        [PWSH, "-NoProfile", "-NonInteractive", "-Command", line + "; [Console]::Out.Write($env:ENVCHECK_TEST)"],
        cwd=str(cwd),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8") == folder
    assert not os.listdir(cwd)


def _fix_lines(report, shell_name: str) -> list[str]:
    lines = [c.line for f in report.findings if f.fix for c in f.fix.commands if c.shell == shell_name]
    lines += [
        c.line
        for s in (*report.verdict.gpu_path, *report.verdict.cpu_path)
        for c in s.commands
        if c.shell == shell_name
    ]
    return lines


@pytest.mark.skipif(BASH is None, reason="no bash")
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(folder=folders)
def test_the_doctors_own_fix_for_a_library_in_a_hostile_folder(folder, tmp_path_factory):
    """Through the rules: cuDNN found only in a folder no loader searches gives an export line."""
    facts = b.library_copies(
        b.named("fake_nvml_2gpu"),
        "cudnn",
        LibraryCopy(
            path=folder + "/libcudnn.so.9",
            directory=folder,
            origin="CUDA_HOME",
            file_version="9",
            on_loader_path=False,
            names=("libcudnn.so.9",),
        ),
    )
    exports = [line for line in _fix_lines(judge(facts), "bash") if line.startswith("export LD_LIBRARY_PATH=")]
    assert exports
    cwd = tmp_path_factory.mktemp("fix")
    for line in exports:
        assert run_bash(line, "LD_LIBRARY_PATH", cwd) == folder
    assert not os.listdir(cwd)


@settings(max_examples=examples(60), deadline=None)
@given(folder=folders)
def test_the_doctors_own_powershell_fix_for_a_library_in_a_hostile_folder(folder):
    facts = b.library_copies(
        b.named("setup_post_win10"),
        "cudart",
        LibraryCopy(
            path=folder + "\\cudart64_100.dll",
            directory=folder,
            origin="CUDA_PATH",
            file_version="10.0",
            on_loader_path=False,
            names=("cudart64_100.dll",),
        ),
    )
    lines = [line for line in _fix_lines(judge(facts), "powershell") if line.startswith("$env:Path = ")]
    assert lines
    values = {powershell_literal_value(line[len("$env:Path = ") :]) for line in lines}
    assert (folder + ";", " + $env:Path") in values


# --- the golden outputs: every printed command parses in its own shell ------------------------------

GOLDEN = sorted((b.FACTS_DIR.parent.parent / "rules" / "golden").glob("*.txt"))


def _printed(path) -> list[tuple[str, str]]:
    """(shell, line) for every command the terminal report shows: '$ ' bash, 'PS> ' PowerShell."""
    out = []
    for raw in path.read_text().splitlines():
        m = re.match(r"^\s*(\$|PS>) (.*)$", raw)
        if m:
            out.append(("bash" if m.group(1) == "$" else "powershell", m.group(2)))
    return out


@pytest.mark.skipif(BASH is None, reason="no bash")
@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_every_bash_line_in_the_golden_reports_parses(golden):
    lines = [line for kind, line in _printed(golden) if kind == "bash"]
    for line in lines:
        done = subprocess.run([BASH, "-n", "-c", line], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, (golden.name, line, done.stderr)


@pytest.mark.parametrize("golden", GOLDEN, ids=lambda p: p.name)
def test_every_powershell_line_in_the_golden_reports_parses(golden):
    lines = [line for kind, line in _printed(golden) if kind == "powershell"]
    if PWSH is not None:  # pragma: no cover - needs pwsh
        for line in lines:
            script = f"$e = $null; [void][System.Management.Automation.Language.Parser]::ParseInput({shell.quote_always(line, shell.POWERSHELL)}, [ref]$null, [ref]$e); $e.Count"
            done = subprocess.run(
                [PWSH, "-NoProfile", "-NonInteractive", "-Command", script], capture_output=True, text=True, timeout=60
            )
            assert done.stdout.strip() == "0", (golden.name, line, done.stdout, done.stderr)
        return
    for line in lines:  # without pwsh: every quoted string closes where the language says
        _balanced_powershell(line)


def _balanced_powershell(line: str) -> None:
    i = 0
    while i < len(line):
        c = line[i]
        if c in PS_QUOTES:
            _value, rest = powershell_literal_value(line[i:])
            i = len(line) - len(rest)
            continue
        if c == '"':
            end = line.find('"', i + 1)
            assert end > i, f"unterminated double-quoted string in {line!r}"
            i = end + 1
            continue
        i += 1
