"""Every regex envcheck applies to text from outside (a snapshot, a file, another program, the
command line) runs in time linear in that text, or on a bounded part of it, as explain's do.

Two checks. The audit: every regex literal outside envcheck/explain with an unbounded repeat is
listed here with why it cannot backtrack for long on a long input; a new one fails until it is
reviewed and added (explain's own patterns are linted by explain's catalogue). The proof: the
functions that apply them are fed strings of 200,000 characters shaped to make a backtracking regex
quadratic ("[[[[...", a run of digits, a run of blanks), in a child with a wall-clock guard far
past what linear work needs, so a regression hangs there instead of passing."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envcheck.compare.facets import _NOISE

try:
    import re._parser as sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "envcheck"
_FUNCTIONS = {"compile", "match", "search", "sub", "subn", "split", "findall", "finditer", "fullmatch"}

ANCHORED = "anchored: one attempt at the start; its repeats are separated by what they cannot match"
LITERAL_FIRST = "each attempt starts at a literal the repeats cannot eat, and ends at the first mismatch"
ONE_CLASS = "one repeated class with nothing after it that can fail"
PER_LINE = "per line (re.M ^ or a literal first): each line's attempt is linear"
OWN_TEXT = "on envcheck's own text, searched within a bound (argparse's message: its first 2,000 characters)"
AFTER_PUNCTUATION = "each attempt starts after . ! ? ' or \" and its blanks are followed by a capital or fail once"
TOKEN_START = "each attempt starts where a word starts (after a blank, by the lookbehind) and scans that word once"

REVIEWED: dict[tuple[str, str | bytes], str] = {
    ("envcheck/cli.py", r"\S{201,}"): ONE_CLASS + " (a run under 201 fails within 200 characters)",
    ("envcheck/cli.py", r"unrecognized arguments?: (\S+)"): LITERAL_FIRST,
    ("envcheck/cli.py", r"(?:argument ([^:]+): )?invalid choice: '([^']*)' \(choose from (.*)\)"): OWN_TEXT,
    ("envcheck/commands/train.py", r"[a-z]+: "): ANCHORED,
    ("envcheck/render/matrix.py", r"(\S[^:]*?  +|[a-z]+: |  )"): ANCHORED,
    ("envcheck/compare/diff.py", r"^(libraries\.libraries\[[^\]]+\])\.copies\[(.+)\]$"): ANCHORED,
    ("envcheck/compare/facets.py", r"^env\.variables\[([^\]]+)\]$"): ANCHORED,
    ("envcheck/compare/facets.py", r"^packages\.distributions\[([^\]]+)\]"): ANCHORED,
    ("envcheck/compare/facets.py", r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)"): ANCHORED,
    ("envcheck/compare/facets.py", r"[-_.]+"): ONE_CLASS,
    ("envcheck/compare/facets.py", _NOISE.pattern): ANCHORED + " (each branch, or a literal first: .seconds)",
    (
        "envcheck/compare/flat.py",
        r"^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?:?\s*|([IWEF])\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s+\d+\s+)",
    ): ANCHORED,
    ("envcheck/compare/fleet.py", r"([0-9]+)"): ONE_CLASS,
    ("envcheck/cuda_devices.py", r"[+-]?[0-9]+"): ANCHORED,
    ("envcheck/filename_fields.py", r"[^A-Za-z0-9._-]+"): ONE_CLASS,
    ("envcheck/invocation.py", r"(?P<lead>\bcommand -v\s+|\bGet-Command\s+)envcheck(?=\s|$)"): LITERAL_FIRST,
    (
        "envcheck/invocation.py",
        r"(?P<lead>^|\|\s*|;\s*|&&\s*|\|\|\s*|\{\s*|\bthen\s+|\bdo\s+)envcheck(?=\s|$)(?P<sub>\s+[a-z]+\b)?",
    ): LITERAL_FIRST + " (or ^), on envcheck's own command lines",
    ("envcheck/machine/wheels.py", r"^(nvidia-[a-z-]+?)-cu(\d+)$"): ANCHORED,
    ("envcheck/matrix/model.py", r"^(sm|compute)_(\d+)(\d)(a?)$"): ANCHORED,
    ("envcheck/probes/gpu_speed.py", r"\s*([\d.]+)\s*GT/s"): ANCHORED + " (re.match of one sysfs value)",
    ("envcheck/probes/gpu_speed.py", r"^Cpus_allowed_list:\s*(\S+)"): PER_LINE,
    ("envcheck/probes/gpu_speed.py", r"node\d+"): ANCHORED + " (fullmatch of a folder name)",
    ("envcheck/render/terminal.py", r"(?<!\S)(?!https?://)[^\s\ue000]*[/\\][^\s\ue000]*"): TOKEN_START,
    ("envcheck/render/terminal.py", r"^(?:(?:PASS|FAIL)  level \d+  |[a-z]+: )"): ANCHORED,
    ("envcheck/render/terminal.py", r"`[^`\n]+`"): LITERAL_FIRST + " (the next backtick ends any attempt)",
    ("envcheck/render/width.py", r"^(?P<lead> +\S+ {2,})(?P<text>\S.*)$"): ANCHORED,
    (
        "envcheck/render/width.py",
        r"`[^`\n]+`|(?<!\S)--[a-z][a-z-]* [^\s-][^\s,;)]*|\b[A-Za-z]:\\(?:[^\\\s,;:]+(?: [^\\\s,;:]+)*\\)+[^\\\s,;:]*",
    ): LITERAL_FIRST + " (a backtick, '--' after a blank, or 'C:\\'; the path's pieces are separated by ' ' and '\\')",
    ("envcheck/shell.py", r"[A-Za-z_][A-Za-z0-9_]*"): ANCHORED + " (fullmatch)",
    ("envcheck/verdict/links.py", r"\d+"): ONE_CLASS,
    (
        "envcheck/machine/values.py",
        r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Failure)|Fatal Python error|Segmentation fault)\b[: ]",
    ): ANCHORED,
    ("envcheck/matrix/libraries.py", r"[A-Za-z]+"): ANCHORED,
    ("envcheck/matrix/libraries.py", r"[a-z_]+?64_(\d{1,4})\.dll"): ANCHORED,
    ("envcheck/matrix/libraries.py", r"lib[a-z_]+?\.so((?:\.\d+)*)"): ANCHORED,
    ("envcheck/matrix/libraries.py", r"lib[a-z_]+?((?:\.\d+)*)\.dylib"): ANCHORED,
    ("envcheck/matrix/loader.py", r"^\d{1,9}(\.\d{1,9})*$"): ANCHORED,
    ("envcheck/matrix/loader.py", r"^https?://\S+$"): ANCHORED,
    ("envcheck/matrix/loader.py", r"^[a-z0-9][a-z0-9._-]*$"): ANCHORED,
    ("envcheck/matrix/loader.py", r"^([a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$"): ANCHORED,
    ("envcheck/matrix/model.py", r"^\d+(\.\d+)*$"): ANCHORED,
    ("envcheck/matrix/model.py", r"\d+(gb|gib|g)|sxm\d*|hbm\d*e?|pcie\d*"): ANCHORED + " (fullmatch of one token)",
    ("envcheck/matrix/model.py", r"^\s*(\d{2,4})(\.\d+)*\s*$"): ANCHORED,
    ("envcheck/matrix/model.py", r"a\d+"): ANCHORED,
    ("envcheck/matrix/model.py", r"[^0-9a-z]+"): ONE_CLASS,
    ("envcheck/planner/target.py", r"^\s*(\d{1,9})\.(\d{1,9})(?!\d)"): ANCHORED,
    ("envcheck/probes/driver.py", r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)*)"): LITERAL_FIRST,
    ("envcheck/probes/driver.py", rb"(?:^|\x00)version=([0-9][0-9.]*)\x00"): LITERAL_FIRST,
    ("envcheck/probes/interpreter.py", r"[-_.]+"): ONE_CLASS,
    ("envcheck/probes/libraries.py", r"^#define\s+CUDA_VERSION\s+(\d+)"): PER_LINE,
    ("envcheck/probes/libraries.py", r"CUDA Version\s+(\d+(?:\.\d+)*)"): LITERAL_FIRST,
    ("envcheck/probes/libraries.py", r"cuda-(\d+\.\d+)$"): LITERAL_FIRST,
    ("envcheck/probes/libraries.py", r"\d+"): ONE_CLASS,
    ("envcheck/probes/library_search.py", r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S(?:.*\S)?)\s*$"): ANCHORED,
    ("envcheck/probes/library_search.py", r"[\\/]v(\d+\.\d+)[\\/]*$"): LITERAL_FIRST,
    ("envcheck/probes/library_search.py", r"\d+"): ONE_CLASS,
    ("envcheck/probes/system.py", r'^PRETTY_NAME="?([^"\n]*)"?'): PER_LINE,
    ("envcheck/probes/system.py", r"^model name\s*:\s*(.+)$"): PER_LINE,
    ("envcheck/probes/system.py", r"^flags\s*:\s*(.+)$"): PER_LINE,
    ("envcheck/probes/tensorflow.py", r"^([IWEF])\d{4} [\d:.]+\s+\d+ ([^\]\s]+:\d+)\] ?"): ANCHORED
    + " (on 8,192 characters of a line)",
    ("envcheck/probes/tensorflow.py", r"^\d{4}-\d\d-\d\d [\d:.]+: ([IWEF]) ([^\]\s]+:\d+)\] ?"): ANCHORED
    + " (on 8,192 characters of a line)",
    (
        "envcheck/probes/tensorflow.py",
        r"(ImportError|ModuleNotFoundError|DLL load failed|Could not find '[^']+\.dll'|Failed to load the native TensorFlow runtime|undefined symbol|Illegal instruction)",
    ): LITERAL_FIRST,
    ("envcheck/redact.py", r"[/\\]+"): ONE_CLASS,
    ("envcheck/rules/environment.py", r"0*[0-9]{1,18}"): ANCHORED,
    ("envcheck/rules/placement.py", r"\.cc:\d+\]\s*"): LITERAL_FIRST,
    ("envcheck/rules/tensorflow.py", r"(?<=[.!?'\"])\s+(?=[A-Z])"): AFTER_PUNCTUATION,
    ("envcheck/scan/discover.py", r"^python(\d+(\.\d+)?)?(\.exe)?$"): ANCHORED,
    ("envcheck/scan/discover.py", r"(\d+)"): ONE_CLASS,
    ("envcheck/scan/kernels.py", r"^(i?python|pythonw)[\d.]*[mtd]?(\.exe)?$"): ANCHORED,
    ("envcheck/scan/kernels.py", r"[a-z0-9._-]+"): ANCHORED + " (fullmatch)",
    ("envcheck/shell.py", r"[A-Za-z0-9_./:=@%+,-]+"): ANCHORED + " (fullmatch)",
    ("envcheck/shell.py", r"(?!--%)[A-Za-z0-9_./:=%+-][A-Za-z0-9_./:=@%+-]*"): ANCHORED + " (fullmatch)",
    ("envcheck/train/cluster.py", r"^\s*(\d{1,5})(?:-(\d{1,5}))?\s*$"): ANCHORED,
    ("envcheck/train/cluster.py", r"\s*([0-9]{1,9})(?:\(x([0-9]{1,12})\))?\s*"): ANCHORED + " (fullmatch)",
    ("envcheck/verdict/links.py", r"(?<=[.!?'\"])\s+(?=[A-Z])"): AFTER_PUNCTUATION,
}

# Patterns built from data or escaped values, checked where they are built (see the second test).
DYNAMIC = {
    "envcheck/compare/diff.py": "the _LABELS table: every pattern anchored at ^",
    "envcheck/compare/facets.py": "the _PATH_LINKS table and each Facet's paths: every pattern anchored at ^",
    "envcheck/invocation.py": "an escaped flag of envcheck's own, after the start or a blank",
    "envcheck/machine/view.py": "an escaped distribution name, matched at the start",
    "envcheck/probes/libraries.py": "an escaped package name, fullmatch of a file name",
    "envcheck/probes/library_search.py": "the library families' names, fullmatch of a file name",
    "envcheck/probes/tensorflow.py": "IMPORTANT_LOG_PATTERNS, on 8,192 characters of a line",
    "envcheck/redact.py": "escaped names and paths (literals) in lookarounds",
    "envcheck/machine/wheels.py": "an escaped extra's name after a literal, in a requirement's marker",
}


def _unbounded(pattern: str | bytes) -> bool:
    text = pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern
    return _walk(sre_parse.parse(text))


def _walk(items) -> bool:
    for op, av in items:
        name = str(op)
        if name.endswith("REPEAT"):
            low, high, sub = av
            if high == sre_parse.MAXREPEAT or _walk(sub):
                return True
        elif name == "SUBPATTERN" and _walk(av[-1]):
            return True
        elif name == "BRANCH" and any(_walk(b) for b in av[1]):
            return True
        elif name in ("ASSERT", "ASSERT_NOT") and _walk(av[1]):
            return True
    return False


def regex_literals() -> tuple[set[tuple[str, str | bytes]], set[str]]:
    """(file, pattern) of every literal with an unbounded repeat outside explain/, and the files
    with a pattern that is not a literal."""
    literal, dynamic = set(), set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "explain" in path.relative_to(PACKAGE).parts:
            continue
        name = str(path.relative_to(REPO).as_posix())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in _FUNCTIONS
                and node.args
            ):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, (str, bytes)):
                if _unbounded(first.value):
                    literal.add((name, first.value))
            else:
                dynamic.add(name)
    return literal, dynamic


def test_every_regex_outside_explain_is_reviewed_for_long_input():
    literal, dynamic = regex_literals()
    new = sorted(literal - REVIEWED.keys(), key=str)
    assert not new, "review for backtracking on a long input, then add to REVIEWED: " + repr(new)
    gone = sorted(REVIEWED.keys() - literal, key=str)
    assert not gone, f"no longer in the code: {gone}"
    assert dynamic <= DYNAMIC.keys(), sorted(dynamic - DYNAMIC.keys())


def test_patterns_built_from_tables_are_anchored_or_bounded():
    from envcheck.compare import diff, facets
    from envcheck.probes import tensorflow

    tables = [p.pattern for p, _ in diff._LABELS] + [p.pattern for p, _ in facets._PATH_LINKS]
    tables += [p for f in facets.FACETS for p in f.paths]
    assert tables and all(p.startswith("^") for p in tables)
    for pattern in (p.pattern for p in tensorflow.IMPORTANT_LOG_PATTERNS):
        assert pattern.startswith("^") or not _unbounded(pattern) or "\\w" in pattern or "[^']+" in pattern


# --- the proof, on 200,000 characters-----------------------------------------------------------------

_PROOF = textwrap.dedent(
    r"""
    import sys
    from envcheck import cli, cuda_devices, invocation, printable, shell
    from envcheck.render.matrix import _fit
    from envcheck.compare import flat, facets, fleet
    from envcheck.machine import pci_product_name, short_device, telling_line
    from envcheck.machine.libraries import library_named_in
    from envcheck.render.plan import _source_kept
    from envcheck.render.width import wrap
    from envcheck.matrix import load_matrix
    from envcheck.planner.target import _PYTHON_PREFIX
    from envcheck.probes.library_search import _LDCONFIG_LINE
    from envcheck.probes.tensorflow import important_log_lines
    from envcheck.rules.tensorflow import first_sentence
    from envcheck.verdict.links import _first_sentence as link_sentence
    from envcheck.words import bracketed

    N = 200_000
    SHAPES = {
        "letters": "a" * N, "digits": "9" * N, "brackets": "[" * N, "blanks": "x" + " " * N + "y",
        "dotted": "1." * (N // 2), "lib": "lib" * (N // 3), "colons": "a:1" * (N // 3),
        "device": "GPU:" + "9" * N, "dll": "_" * N + ".dl", "sentences": ". " * (N // 2),
        "pipes": "| " * (N // 2), "error": "Error" * (N // 5), "matmul": "x: (" + "MatMul" * (N // 6),
    }
    matrix = load_matrix()
    CALLS = {
        "short_device": short_device, "pci_product_name": pci_product_name, "telling_line": telling_line,
        "bracketed": bracketed, "first_sentence": first_sentence, "link sentence": link_sentence,
        "library in an error": library_named_in, "unkeyed path": flat._unkeyed, "log stamp": flat.normalise_log_line,
        "noise": facets.is_noise, "priority": facets.priority, "natural_key": fleet.natural_key,
        "hostlist": lambda s: fleet.hostlist([s, s + "1", "n1"]), "gpu by name": matrix.gpu,
        "architecture": matrix.architecture, "visible devices": cuda_devices.read_visible_devices,
        "python prefix": _PYTHON_PREFIX.match, "ldconfig line": _LDCONFIG_LINE.match,
        "log lines": important_log_lines, "one_line": cli.one_line, "runnable": invocation.runnable,
        "printable": printable.printable, "quote bash": lambda s: shell.quote(s, shell.BASH),
        "quote powershell": lambda s: shell.quote(s, shell.POWERSHELL), "matrix text": lambda s: _fit(s, 100), "wrapped": lambda s: wrap(s, 100, 4), "plan's source": _source_kept,
    }
    for call, function in CALLS.items():
        for shape, text in SHAPES.items():
            print(call, shape, flush=True)
            function(text)
    print("done", flush=True)
    """
)


def test_hostile_text_of_200000_characters_is_read_in_linear_time():
    """A guard, not a measure: linear work takes seconds here; one quadratic regex on this much
    text takes an hour (short_device took 87 s on half of it), so the child would still be on the call it names when the guard ends it."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROOF], capture_output=True, text=True, env=env, timeout=600, cwd=str(REPO)
        )
    except subprocess.TimeoutExpired as exc:
        last = (exc.stdout or b"").decode().strip().splitlines()[-1:] if exc.stdout else ["(nothing)"]
        pytest.fail(f"still running after the guard, at: {last}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("done")
