"""One normal form for pasted text, so that a pattern is written once and matches every way a
message reaches a user: copied from a terminal, a web page, an e-mail, a CI log, a notebook.

What changes nothing but defeats a literal match, and what is done about it:

- typographic quotes, dashes and spaces (’ “ ” – — NBSP, zero-width) become ASCII;
- HTML entities from a web page (``&#39;``, ``&quot;``, ``&amp;``) are decoded;
- a quote escaped inside a quoted string (a JSON log record, a Go error's ``%q``, a Python repr:
  ``driver \"nvidia\"``) reads as the quote; colour escapes (``ESC[31m``) are dropped; runs of blanks (spaces, tabs) become one space; a space before a
  colon, semicolon or comma goes (``handle : CUDNN`` reads ``handle: CUDNN``), and so does one
  between a word and an index (``shape [2]`` reads ``shape[2]``);
- the prefixes logging systems put before a message are stripped: timestamps, glog's
  ``E0000 00:00:1796056754.682237 7566 cuda_platform.cc:52]``, TensorFlow 1.x/2.x's
  ``W tensorflow/.../dso_loader.cc:64]``, Kubernetes' container-runtime ``... stderr F``, a
  ``kubectl --prefix`` pod, docker compose's ``service | ``, Airflow's ``[time] {file.py:12} INFO -``,
  the kernel's ``[ 12.345678]`` and syslog's ``host kernel:``, a Markdown quote ``> ``;
- a line hard-wrapped in the middle of a message (an e-mail, a forum, a narrow terminal, a
  container runtime's partial lines) is joined to the line it was cut from;
- what a wrapping program does is read from the block's own shape: a terminal's cuts at exactly
  its width are joined outright without a blank (``join_terminal_cuts``), a word-wrapper's breaks
  where the next word would not fit are read joined in runs (``wrapped_runs``), a relaying
  program's prefix on every line is learned from the first lines and taken off (``learn_wrapper``,
  ``strip_wrappers``), colour escapes go (``strip_colour``), and a JSON log record or a Python
  repr holding the output is read as the lines it holds (``decode_envelopes``).

Two levels, so that a 100 MB log stays fast: ``search_key`` folds a whole block of bytes with
byte-level passes (the scanner's needle search runs on it, so a needle is found whatever the
spacing, quoting or dashes), and ``normalise_line`` turns the few candidate lines into the exact
normal form the regexes are written against. A line that looks cut (``wrapped_lines``) is also
read joined with the next, for the messages neither line holds alone; a container runtime's
partial records are joined outright, the newline they lose moving after the joined line, so every
line keeps its number.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import Optional

# --- line level: the normal form regexes are written against ------------------------------------

_FOLD = str.maketrans(
    {
        "\u2018": "'",  # ‘
        "\u2019": "'",  # ’
        "\u201a": "'",  # ‚
        "\u201b": "'",  # ‛
        "\u2032": "'",  # ′
        "\u00b4": "'",  # ´
        "\u201c": '"',  # “
        "\u201d": '"',  # ”
        "\u201e": '"',  # „
        "\u2033": '"',  # ″
        "\u00ab": '"',  # «
        "\u00bb": '"',  # »
        "\u2010": "-",  # hyphen
        "\u2011": "-",  # non-breaking hyphen
        "\u2012": "-",  # figure dash
        "\u2013": "-",  # en dash
        "\u2014": "-",  # em dash
        "\u2212": "-",  # minus sign
        "\u2026": "...",  # …
        "\u00a0": " ",  # no-break space
        "\u2007": " ",
        "\u2009": " ",  # thin space
        "\u202f": " ",  # narrow no-break space
        "\u3000": " ",  # ideographic space
        "\t": " ",
        "\u200b": None,  # zero-width space
        "\u200c": None,
        "\u200d": None,
        "\u2060": None,
        "\ufeff": None,  # byte-order mark, or a zero-width no-break space pasted from a page
    }
)
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,24}[ -/]{0,3}[@-~]|\x1b[@-Z\\-_]")
_BLANKS = re.compile(r" {2,}")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<=\S) (?=[:;,](?: |$))")
_SPACE_BEFORE_INDEX = re.compile(r"(?<=[A-Za-z_]) \[(?=\d)")
# TensorFlow's loader quotes the file it could not open ("Could not load dynamic library
# 'libcudnn.so.8'", dso_loader.cc; "Could not find 'cudart64_100.dll'", self_check.py); a message
# pasted inside a shell's '...' loses those quotes, so the normal form puts them back.
_UNQUOTED_LIBRARY = re.compile(
    r"\b(Could not (?:load dynamic|dlopen) library|Could not find) "
    r"([\w+-]+(?:\.[\w+-]+)*\.(?:so(?:\.\d+){0,3}|dll|dylib))(?=[;.,:]?(?: |$))"
)

# The prefixes of programs that relay or file another's lines, each written once: the line-level
# reading (``_PREFIXES``, ``_RELAYS``) and the block-level one (``_WRAPPERS``) use the same text.
_KUBECTL = r"\[pod/[^\]\s]{1,200}\] "  # kubectl logs --prefix
_COMPOSE = r"[\w.-]{1,60} {0,20}\| (?=\S)"  # docker compose: service-1  | message
_LAUNCHER = r"\[\d{1,6}(?:,\d{1,6})?\]<(?:stdout|stderr|stddiag)>: ?"  # mpirun --tag-output, horovodrun over Gloo
_TORCHRUN = r"\[(?:rank|default)\d{1,6}\]: ?"  # torchrun, torch.distributed's per-rank output
_RAY = (
    r"\((?:[\w.:-]{1,80} )?pid=\d{1,10}(?:, ip=[\da-fA-F.:]{3,45})?\) "  # Ray: (pid=1234) , (Worker pid=1, ip=10.0.0.1)
)
_JUPYTER = r"\[[DIWEC] (?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d{1,6})? [\w.]{1,40}\] "  # Jupyter's server log
_AIRFLOW = r"\[\d{4}-\d{2}-\d{2}[^\]]{0,40}\] \{[\w.-]{1,80}:\d{1,6}\} [A-Z]{3,8} - "  # [2023-01-01, 12:00:00 UTC] {subprocess.py:92} INFO -
_SYSLOG = r"[A-Z][a-z]{2} {1,2}\d{1,2} \d{2}:\d{2}:\d{2} [\w.-]{1,64} [\w./-]{1,40}(?:\[\d{1,10}\])?: "  # Jan  2 03:04:05 host kernel:

# Log prefixes, each anchored at the start of the line and bounded, tried in a loop (a timestamp
# often stands before a glog prefix). Comments name the system that writes each.
_PREFIXES = re.compile(
    "|".join(
        (
            r"> {0,3}",  # a Markdown or e-mail quote
            _KUBECTL,
            # the container runtime's log file (CRI): time, stream, F(ull) or P(artial) line
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}) (?:stdout|stderr) [FP] ",
            _AIRFLOW,
            # glog / absl (TensorFlow 2.12+, XLA): E0000 00:00:1796056754.682237 7566 cuda_platform.cc:52]
            r"[IWEF]\d{4} [\d:.]{8,24} {1,12}\d{1,10} [\w./+-]{1,200}:\d{1,6}\] ",
            # TensorFlow 1.x-2.11 after the time: W tensorflow/stream_executor/.../dso_loader.cc:64]
            r"[IWEF] [\w./\\:+-]{1,200}\.(?:cc|cpp|h|py):\d{1,6}\] ",
            # a time stamp: 2021-04-09 19:52:41.024315: , 2024-05-02T10:11:12Z , [2023-01-01 12:00:00]
            r"\[?\d{4}[-/]\d{2}[-/]\d{2}[ T,]{1,2}\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?: ?(?:Z|UTC|[+-]\d{2}:?\d{2}))?\]?:? ",
            r"\[?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\]? ",  # a time alone
            r"\[ {0,8}\d{1,9}\.\d{3,9}\] ",  # the kernel's ring buffer (dmesg)
            _SYSLOG,  # syslog / journald
            _COMPOSE,
            # the launchers' per-process prefixes, Ray's workers, Jupyter's server log
            _LAUNCHER,
            _TORCHRUN,
            _RAY,
            _JUPYTER,
            # Python logging's default format and TensorFlow's own: WARNING:tensorflow:
            r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL):[\w.]{1,80}:",
            r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL) {1,3}[-:|] ",
        )
    )
)
MAX_PREFIXES = 4  # a prefix inside a prefix (time, then glog); more is a message, not a prefix
# The prefixes of the programs that relay a program's lines (not of the record itself: its time,
# severity and source file stay for the patterns that read them, ``keep_prefixes``)
_RELAYS = re.compile("|".join((r"> {0,3}", _KUBECTL, _COMPOSE, _LAUNCHER, _TORCHRUN, _RAY)))


def normalise_line(text: str, keep_prefixes: bool = False) -> str:
    """The normal form of one line (see the module's docstring); ``keep_prefixes`` keeps the log
    prefixes (a record's severity letter and source file, for the patterns that read them)."""
    for _ in range(2):  # a page that escaped its text twice shows &amp;#39;
        if "&" not in text:
            break
        text = _ENTITY.sub(_entity, text)
    text = text.translate(_FOLD)
    if "\\" in text and ('\\"' in text or "\\'" in text):
        # a message inside a quoted string (JSON, a Go error's %q, a Python repr): \" is a quote
        text = text.replace('\\"', '"').replace("\\'", "'")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\t" in text:
        text = text.replace("\t", " ")  # a tab is a blank like any other
    text = text.strip()
    if "  " in text:
        text = _BLANKS.sub(" ", text)
    if " :" in text or " ;" in text or " ," in text:
        text = _SPACE_BEFORE_PUNCTUATION.sub("", text)
    if " [" in text:
        text = _SPACE_BEFORE_INDEX.sub("[", text)
    if "Could not " in text:
        text = _UNQUOTED_LIBRARY.sub(r"\1 '\2'", text)
    # a record's own prefix (time, severity, source file) stays for the patterns that read it;
    # a relaying program's goes either way
    return strip_prefixes(text, _RELAYS if keep_prefixes else _PREFIXES)


def strip_prefixes(text: str, prefixes: re.Pattern[str] = _PREFIXES) -> str:
    for _ in range(MAX_PREFIXES):
        found = prefixes.match(text)
        if found is None or found.end() == 0:
            break
        text = text[found.end() :].lstrip()
    return text


def _entity(found: re.Match[str]) -> str:
    decoded = html.unescape(found.group(0))
    # A decoded control character would be a new line or worse; keep the entity as written.
    return decoded if decoded.isprintable() else found.group(0)


# --- block level: joining hard-wrapped lines, and the key the needles are searched in -----------

# Where a continuation may start, after at most a few blanks: a lower-case word, a quote, a
# parenthesis or a path; or an upper-case identifier with an underscore (CUDA_ERROR_NO_DEVICE) after
# a line that ended in a colon.
_CONTINUATION = re.compile(rb" {0,8}(?:[a-z'\"(/\\]|[A-Z][A-Z0-9]{1,30}_[A-Z0-9_]{1,60})")
_START_BYTES = {bytes([b]) for b in b"abcdefghijklmnopqrstuvwxyz'\"(/\\ ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
_SENTENCE_END = b".!?])}|"
MAX_WRAPS = 64  # joined lines read per chunk
MIN_WRAPPED = 12  # a shorter line (a heading, "Epoch 1/10") ended on its own
# The container runtime (CRI) cuts a long line into P(artial) records, then an F(ull) one.
_CRI = re.compile(rb"\d{4}-\d{2}-\d{2}T[\d:.]{8,24}(?:Z|[+-]\d{2}:?\d{2}) (?:stdout|stderr) ([FP]) ")


def join_partial_records(block: bytes) -> bytes:
    """``block`` with a container runtime's partial records joined to the record they continue.
    A joined record leaves its newline behind it, after the record it joined, so every line keeps
    its number."""
    if b" P " not in block or (b"stderr P " not in block and b"stdout P " not in block):
        return block
    joins = _partial_records(block)
    if not joins:
        return block
    out: list[bytes] = []
    start = 0
    owed = 0
    for at in sorted(joins):
        out.append(block[start:at])
        owed += 1
        start = at + 1 + joins[at]
        end = block.find(b"\n", start)
        if end not in joins:  # the joined line ends here (or with the block): pay the newlines back
            stop = len(block) if end < 0 else end + 1
            out.append(block[start:stop] + b"\n" * owed)
            start, owed = stop, 0
    out.append(block[start:])
    return b"".join(out)


def wrapped_lines(lines: list[bytes], around: Optional[Iterable[int]] = None) -> list[tuple[list[int], bytes]]:
    """Each distinct pair of lines whose first looks cut (``continues``), as (the indexes of the
    first line of every such pair, the two joined); only the pairs that hold a line of ``around``
    when it is given. Whether a line may be cut, and whether it may continue another, is decided
    once per distinct line (a log repeats itself), so a log with no such lines costs one pass.
    The scanner reads a joined line only for the messages that neither of its two lines holds,
    so two messages on consecutive lines stay two."""
    last = len(lines) - 1
    if around is None:
        indexes: Iterable[int] = range(last)
        distinct: Iterable[bytes] = dict.fromkeys(lines)
    else:
        indexes = sorted({i for j in around for i in (j - 1, j) if 0 <= i < last})
        distinct = {line for i in indexes for line in (lines[i], lines[i + 1])}
    starts = {line for line in distinct if line[:1] in _START_BYTES and may_continue(line)}
    cuts = {line for line in distinct if may_be_cut(line)} if starts else set()
    if not cuts:
        return []
    found: dict[tuple[bytes, bytes], Optional[list[int]]] = {}
    wraps = 0
    for index in indexes:
        following = lines[index + 1]
        line = lines[index]
        if following not in starts or line not in cuts:
            continue
        pair = (line, following)
        if pair not in found:
            # so many cut lines are a log's own lines, not a pasted message: enough
            found[pair] = [] if wraps < MAX_WRAPS and continues(line, following) else None
            wraps += found[pair] is not None
        where = found[pair]
        if where is not None:
            where.append(index)
    return [(where, pair[0].rstrip(b"\r") + b" " + pair[1].strip()) for pair, where in found.items() if where]


# What a wrapping program does, read from the block's own shape (``wrapped_runs``):
# - a terminal cuts a line at exactly its width, mid-word if it falls there: every cut line is as
#   long as the longest line of the block, and the rest goes on in the next line as it was (no blank
#   added or lost);
# - a word-wrapper (a forum, an e-mail, a logger's formatter) breaks at a blank, where the next word
#   would not fit: a cut line plus a blank plus the first word of the next line is wider than any
#   line it wrote, and the next line may carry an indent of its own.
# A line that is neither a terminal's nor a word-wrapper's cut ends where its program ended it.
MIN_WIDTH = 40  # narrower blocks are lists, not wrapped paragraphs
MAX_RUN = 16  # lines read joined as one run
MAX_RUNS = 64  # runs read per chunk
MAX_AROUND = 512  # needle lines of a large chunk looked around for runs; more are a log's own
_FRAME_LINE = re.compile(rb"\s{0,16}File \"")  # a traceback's frame: its code follows, indented
_ANSI_BYTES = re.compile(_ANSI.pattern.encode())  # the line level's colour escapes, over bytes


def strip_colour(block: bytes) -> bytes:
    """``block`` without its terminal escapes (colour, cursor moves): they take no column and hold
    no word. One pass that looks only at ESC bytes, done only where the block holds one."""
    return _ANSI_BYTES.sub(b"", block) if b"\x1b" in block else block


def columns(line: bytes) -> int:
    """How many columns ``line`` takes on a terminal (characters, colour escapes excluded)."""
    if b"\x1b" in line:
        line = _ANSI_BYTES.sub(b"", line)
    return len(line) if line.isascii() else len(line.decode("utf-8", "replace"))


# A program's output inside a record of another's: a JSON log record (a logging library's, docker's
# json-file driver, journald's export, a cloud logger's) whose message holds it with \n escapes, or
# a Python repr (a list of lines, a str, a bytes) of it. Such a line is read as the lines it holds.
_ENVELOPE_KEYS = ("message", "msg", "log", "MESSAGE", "textPayload", "text", "stderr", "stdout", "output")
_REPR_STARTS = (b"[", b"(", b"'", b'"', b"b'", b'b"')


def decode_envelopes(block: bytes) -> bytes:
    """``block`` with each line that is a JSON record with a message, or a Python repr holding
    escaped newlines (``\n``), replaced by the text it holds (the lines after it are numbered as decoded). For a
    pasted block: the scanner asks it of small ones only."""
    if b"\\n" not in block and b'{"' not in block:
        return block
    lines = block.split(b"\n")
    changed = False
    for i, line in enumerate(lines):
        body = line.strip()
        if b"\\n" in body or (body[:2] == b'{"' and body[-1:] == b"}"):  # a JSON record: its message, escaped
            text = _envelope_text(body)
            if text is not None:
                lines[i], changed = text, True
    return b"\n".join(lines) if changed else block


def _envelope_text(body: bytes) -> Optional[bytes]:
    # Imported here: only a block with an escaped newline in it needs a decoder.
    import ast
    import json

    if body[:1] == b"{" and body[-1:] == b"}":
        try:
            record = json.loads(body)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        value = next((record[k] for k in _ENVELOPE_KEYS if isinstance(record.get(k), str) and record[k].strip()), None)
        return None if value is None else value.rstrip("\n").encode("utf-8", "surrogateescape")
    if not body.startswith(_REPR_STARTS):
        return None
    try:
        value = ast.literal_eval(body.decode("utf-8"))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, UnicodeDecodeError):
        return None
    parts = list(value) if isinstance(value, (list, tuple)) else [value]
    texts = [part.decode("utf-8", "replace") if isinstance(part, bytes) else part for part in parts]
    if not texts or not all(isinstance(text, str) for text in texts):
        return None
    joined = "".join(text if text.endswith("\n") else text + "\n" for text in texts)
    return joined.rstrip("\n").encode("utf-8", "surrogateescape")


# The prefix a wrapper puts on every line of what it relays, each anchored at the line's start.
# A block whose first lines carry one of these has it taken off every line (``strip_wrappers``).
_WRAPPERS = tuple(
    re.compile(p)
    for p in (
        rb"[\w.-]{1,60} {0,20}\|(?: (?=\S)| ?$)",  # docker compose: service-1  | message
        _KUBECTL.encode(),
        # GitHub Actions' raw log (the container runtime's own time, stream and F/P stay: its
        # partial records are joined first)
        rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z (?!std(?:out|err) [FP] )",
        _SYSLOG.encode(),  # journald and syslog: May 01 10:00:00 host python3[1234]:
        _JUPYTER.encode(),  # [I 2024-05-01 10:00:00.000 ServerApp] , [W 10:00:00.000 NotebookApp]
        rb"\[\d{1,6},\d{1,6}\]<(?:stdout|stderr|stddiag)>: ?",  # mpirun --tag-output (horovodrun over MPI)
        rb"\[\d{1,6}\]<(?:stdout|stderr)>: ?",  # horovodrun over Gloo
        _TORCHRUN.encode(),
        _RAY.encode(),
        rb" {0,5}\d{1,6}: ",  # srun --label: the task's number
        _AIRFLOW.encode(),  # Airflow's task log
        rb">(?: |$)",  # a Markdown or e-mail quote (not Python's prompt, ">>>", which no blank follows)
    )
)
SAMPLE_LINES = 12  # the first non-blank lines a block's wrapper is learned from


def learn_wrapper(block: bytes) -> Optional[re.Pattern[bytes]]:
    """The wrapper prefix most of the block's first non-blank lines (two at least) start with."""
    sample: list[bytes] = []
    start = 0
    while len(sample) < SAMPLE_LINES and start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end
        if block[start:end].strip():
            sample.append(block[start:end])
        start = end + 1
    if len(sample) < 2:
        return None
    for wrapper in _WRAPPERS:
        if 2 * sum(1 for line in sample if wrapper.match(line)) > len(sample):
            return wrapper
    return None


def strip_wrappers(block: bytes, wrapper: Optional[re.Pattern[bytes]], small: bool) -> bytes:
    """``block`` with ``wrapper``'s prefix taken off every line that has it, every line kept. A
    small block (a paste) is read line by line; a large one (a log) only when the prefix is the
    same bytes on its first lines (docker compose's, kubectl's, a rank's): one replace over the
    block. A large log's other prefixes are taken off the lines the scanner reads (``normalise_line``)."""
    if wrapper is None:
        return block
    if small:
        lines = block.split(b"\n")
        for i, line in enumerate(lines):
            found = wrapper.match(line)
            if found:
                lines[i] = line[found.end() :]
        return b"\n".join(lines)
    first = wrapper.match(block)
    if first is None or not first.group(0).strip():
        return block
    literal = first.group(0)
    if block.count(b"\n" + literal, 0, 1 << 16) * 2 < block.count(b"\n", 0, 1 << 16):
        return block  # the prefix changes from line to line (a time, a pid): not one literal
    return block[len(literal) :].replace(b"\n" + literal, b"\n")


def join_terminal_cuts(block: bytes, wrapper: Optional[re.Pattern[bytes]] = None) -> bytes:
    """``block`` with the lines a terminal cut at its width joined outright (see above): where two
    distinct lines or more are exactly as wide as the widest line and each goes on in the next
    (not a new log record, traceback or prompt), the width is the terminal's, and every line of
    that width is joined to the next as it was, without a blank. A joined line leaves its newlines
    behind it, so every line keeps its number. For a pasted block (the scanner asks it of small
    ones only): one pass over its lines."""
    lines = block.split(b"\n")
    if len(lines) < 3:
        return block
    if block.isascii() and b"\x1b" not in block and b"\r" not in block:
        widths = [len(line) for line in lines]
    else:
        widths = [columns(line.rstrip(b"\r")) for line in lines]
    widest = max(widths)
    if widest < MIN_WIDTH:
        return block
    cuts = {
        i
        for i in range(len(lines) - 1)
        if widths[i] == widest
        and _goes_on_after_a_cut(lines[i + 1], lines[i][:_SAME_START])
        and not (wrapper is not None and wrapper.match(lines[i + 1]))  # a wrapper's next line
    }
    # A run must end in its tail (narrower): lines of one template repeated (each as wide as the
    # next) are records, not a cut. And the width must be a terminal's, not a word-wrapper's, whose
    # widest lines may be two of the same width too: three distinct lines cut at it, or two with a
    # blank at the cut (a word-wrapper drops the blank it breaks at).
    if not any(i + 1 not in cuts and widths[i + 1] < widest for i in cuts) or not _terminal_width(lines, cuts):
        return block
    out: list[bytes] = []
    i = 0
    while i < len(lines):
        if i not in cuts:
            out.append(lines[i])
            i += 1
            continue
        text, j = lines[i].rstrip(b"\r"), i
        while j in cuts and j - i < MAX_RUN:
            j += 1
            text += lines[j].rstrip(b"\r")
        out.append(text)
        out.extend([b""] * (j - i))
        i = j + 1
    return b"\n".join(out)


def _terminal_width(lines: list[bytes], cuts: Iterable[int]) -> bool:
    """Whether the lines ``cuts`` indexes (each as wide as the widest line, each going on in the
    next) show a terminal's width rather than a word-wrapper's (see ``join_terminal_cuts``)."""
    distinct = {lines[i] for i in cuts}
    if len(distinct) >= 3:
        return True
    blank_at_cut = any(lines[i].rstrip(b"\r").endswith(b" ") or lines[i + 1][:1] == b" " for i in cuts)
    return len(distinct) == 2 and blank_at_cut


_SAME_START = 16  # a line that starts as the one before did is the next record, not its rest


def _goes_on_after_a_cut(following: bytes, start: bytes) -> bool:
    body = following.rstrip(b"\r").lstrip(b" ")
    if not body or following.startswith(start):
        return False
    return not (_NEW_RECORD.match(body) or _LOG_RECORD.match(body) or _PROMPT_START.match(body))


def wrapped_runs(
    lines: list[bytes], around: Optional[Iterable[int]] = None
) -> list[tuple[list[int], int, tuple[bytes, ...], bool]]:
    """Runs of lines that a terminal or a word-wrapper cut from one line (see above) and that the
    pairs of ``wrapped_lines`` do not already read: more than two lines, or a cut that only the
    block's width shows. Each as (the indexes of its first line wherever the same run repeats, its
    number of lines, the run joined: a terminal's cut without a blank, a word-wrapper's with one;
    where one line alone is as wide as the widest, so the cut may be either, both readings; and
    whether the run may be trusted over its lines: not where that line ends a sentence, and may
    end there)).
    ``around``: only the runs that hold one of those lines (a large log, read near its needles)."""
    count = len(lines)
    if count < 2:
        return []
    if around is None:
        indexes: Iterable[int] = range(count)
        width_of: Optional[list[int]] = [columns(line.rstrip(b"\r")) for line in lines]
        widths = width_of
    else:
        around = list(around)
        if len(around) > MAX_AROUND:
            return []  # a log's own lines, most of them holding a needle: not a paste
        indexes = sorted({i for j in around for i in range(j - MAX_RUN + 1, j + 1) if 0 <= i < count - 1})
        if not indexes:
            return []
        width_of = None
        widths = list(map(len, lines))  # bytes for columns: a large log is read near its needles only
    widest = max(widths)
    if widest < MIN_WIDTH:
        return []
    # lines cut at the same column, as only a terminal cuts them (``join_terminal_cuts``)
    at_widest: list[int] = []
    at = widths.index(widest)
    while len(at_widest) < SAMPLE_LINES:
        if at < count - 1 and lines[at + 1].strip():
            at_widest.append(at)
        try:
            at = widths.index(widest, at + 1)
        except ValueError:
            break
    terminal = len(at_widest) >= 2 and _terminal_width(lines, at_widest)

    def width(i: int) -> int:
        return width_of[i] if width_of is not None else columns(lines[i].rstrip(b"\r"))

    def junction(i: int) -> str:
        """How line i goes on in line i + 1: "" (it does not), "hard", "soft", "either", "pair"."""
        line, following = lines[i].rstrip(b"\r"), lines[i + 1].rstrip(b"\r")
        body = following.lstrip(b" ")
        if not body or not line.strip():
            return ""
        at = width(i)
        if _LOG_RECORD.match(body):
            return ""  # a logger's record (glog's "I tensorflow/...cc:N]", a timestamp) starts a line of its own
        if at == widest and not _NEW_RECORD.match(body):
            if terminal:
                return "hard"
            # the widest line alone: its width says nothing; where it ends a sentence, it may end
            return "either" if line.rstrip()[-1:] not in _SENTENCE_END else "either-end"
        if continues(line, following):
            return "pair"
        if at < MIN_WRAPPED or _FRAME_LINE.match(line) or _NEW_RECORD.match(body) or _PROMPT_START.match(body):
            return ""
        word = body.split(b" ", 1)[0]
        return "soft" if at + 1 + columns(word) > widest else ""

    memo: dict[int, str] = {}

    def joins(i: int) -> str:
        if i not in memo:
            memo[i] = junction(i)
        return memo[i]

    found: dict[tuple[bytes, ...], list[int]] = {}
    lengths: dict[tuple[bytes, ...], int] = {}
    trusted: dict[tuple[bytes, ...], bool] = {}
    covered = -1
    for start in indexes:
        if start <= covered or (start > 0 and joins(start - 1)):
            continue  # inside a run, or it goes on from the line before: read from where it starts
        kinds = []
        end = start
        while end < count - 1 and len(kinds) < MAX_RUN - 1:
            kind = joins(end)
            if not kind:
                break
            kinds.append(kind)
            end += 1
        covered = end
        if not kinds or (len(kinds) == 1 and kinds[0] == "pair"):
            continue  # one line, or a pair ``wrapped_lines`` reads
        texts = [_join(lines, start, kinds, hard_either=False)]
        if "either" in kinds or "either-end" in kinds:
            texts.append(_join(lines, start, kinds, hard_either=True))
        key = tuple(texts)
        if key not in found and len(found) >= MAX_RUNS:
            break
        found.setdefault(key, []).append(start)
        lengths[key] = len(kinds) + 1
        trusted[key] = "either-end" not in kinds
    return [(where, lengths[key], key, trusted[key]) for key, where in found.items()]


def _join(lines: list[bytes], start: int, kinds: list[str], hard_either: bool) -> bytes:
    text = lines[start].rstrip(b"\r")
    for offset, kind in enumerate(kinds, start + 1):
        following = lines[offset].rstrip(b"\r")
        if kind == "hard" or (kind.startswith("either") and hard_either):
            text += following
        else:
            text = text.rstrip() + b" " + following.strip()
    return text


_PROMPT_START = re.compile(rb"(?:>>>|\.\.\.|\$|#|PS [A-Z]:|In \[\d{1,6}\]:|[A-Za-z]:\\[^>\n]{0,200}>)(?: |$)")


# Python's interactive prompt (sys.ps1, ">>> ") and IPython's ("In [3]: ") echo an expression;
# the interpreter prints its value's repr after it (IPython after "Out[3]: "), once the log records
# the call wrote meanwhile (TensorFlow's start-up lines, a deprecation warning) are out, so
# ">>> tf.config.list_physical_devices('GPU')" and the "[]" under its log lines are one statement
# and its answer.
# (after any prefix the normal form drops); a shell's "python -c '...'" prints its output after it too
_PROMPT = re.compile(
    rb"(?:>>>|In(?:[ \t]|\xc2\xa0){1,16}\[\d{1,6}\]:|\bpython[\d.]{0,5}(?:\.exe)?(?:[ \t]|\xc2\xa0){1,16}-c)(?:[ \t]|\xc2\xa0){1,16}\S"
)
_ANSWER = re.compile(rb"^\s{0,8}(?:Out\[\d{1,6}\]: )?\S")
_NOT_ANSWER = re.compile(rb"^\s{0,8}(?:>>>|\.\.\.|In \[\d{1,6}\]:|Traceback )")
# a log record: a time stamp or glog's level and date first, a logger's level word, TensorFlow's
# own continuation lines (a deprecation's "Instructions for updating:", cpu_feature_guard's
# "To enable the following instructions", gpu_device.cc's "Skipping registering GPU devices...")
_LOG_RECORD = re.compile(
    rb"^\s{0,8}(?:\[?\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|[IWEF]\d{4} |(?:WARNING|INFO|ERROR|DEBUG)\b|"
    rb"Instructions for updating|To enable the following|Skipping registering|[IWE] tensorflow/)"
)
MAX_ANSWER = 200  # a value's repr worth reading with its statement: a short one ([], False, '')
MAX_ANSWERS = 64  # statements read with their answers per chunk
MAX_RECORDS = 40  # log records between a statement and its answer


def at_prompt(line: bytes) -> bool:
    """Whether a line is a statement typed at a prompt (the scanner asks it of the lines that hold a
    needle and of the few before each, where a statement a terminal cut starts: a statement worth
    reading with its answer names what a pattern looks for)."""
    return _PROMPT.search(line, 0, 240) is not None


def prompt_answers(lines: list[bytes], statements: Iterable[int]) -> list[tuple[list[int], bytes]]:
    """Each distinct statement typed at Python's or IPython's prompt (the lines ``statements``
    indexes, each ``at_prompt``) with the value printed after it, as (the indexes of the statement's
    line, the two joined with a space); the scanner reads them for the messages that neither line
    holds alone."""
    found: dict[tuple[bytes, bytes], list[int]] = {}
    last = len(lines)
    for index in sorted(statements):
        if index >= last - 1:
            continue
        line = lines[index]
        statement, after = line.rstrip(b"\r"), index + 1
        # a statement a terminal cut goes on in the next line (``continues``)
        while after < last and after - index <= 3 and continues(lines[after - 1], lines[after]):
            statement, after = statement + b" " + lines[after].strip(), after + 1
        first_record = after
        # the log records, the lines a terminal cut one of them into (``continues``), and the
        # instructions under a deprecation's "Instructions for updating:" (tensorflow/python/util/deprecation.py)
        while (
            after < last
            and after - index <= MAX_RECORDS
            and (
                _LOG_RECORD.match(lines[after])
                or (after > first_record and continues(lines[after - 1], lines[after]))
                or lines[after - 1].rstrip().endswith(b"Instructions for updating:")
            )
        ):
            after += 1
        if after >= last:
            continue
        answer = lines[after].rstrip(b"\r")
        if len(answer) > MAX_ANSWER or not _ANSWER.match(answer) or _NOT_ANSWER.match(answer):
            continue
        pair = (statement, answer.strip())
        if pair not in found and len(found) >= MAX_ANSWERS:
            break
        found.setdefault(pair, []).append(index)
    return [(where, pair[0] + b" " + pair[1]) for pair, where in found.items()]


def may_be_cut(line: bytes) -> bool:
    """Whether a line could go on in the next one (the scanner keeps such a last line of a chunk
    for the next chunk, so a wrap is read whatever the chunk size)."""
    stripped = line.strip()
    return len(stripped) >= MIN_WRAPPED and stripped[-1] not in _SENTENCE_END


def continues(line: bytes, following: bytes) -> bool:
    """Whether ``line`` was cut and goes on in ``following``: it is long enough and ends without a
    sentence's end, and the next line starts like a continuation, no deeper indented."""
    if not may_be_cut(line) or not may_continue(following):
        return False
    indent = len(following) - len(following.lstrip(b" "))
    if len(line) - len(line.lstrip(b" ")) < indent:
        return False  # indented deeper than the line before: a block of its own (a traceback's code)
    return not (65 <= following[indent] <= 90 and not line.rstrip().endswith(b":"))  # an identifier: after a colon


def may_continue(following: bytes) -> bool:
    """Whether a line starts like the continuation of a cut one (whatever the line before)."""
    if _CONTINUATION.match(following) is None:
        return False
    indent = len(following) - len(following.lstrip(b" "))
    return not _NEW_RECORD.match(following, indent)


# A line that starts a new record is never a continuation: a traceback, a shell prompt, a list.
_NEW_RECORD = re.compile(
    rb"(?:Traceback|File \"|During handling|The above exception|>>> |\$ |PS [A-Z]:|"
    # a Python exception starts its own record: its class is CamelCase (torch.cuda.OutOfMemoryError),
    # a word cut before "cudnnException: " is not one
    rb"(?:[\w.]{0,200}\.)?[A-Z]\w{0,120}(?:Error|Exception|Warning|Exit): )"
)


def is_partial_record(line: bytes) -> bool:
    found = _CRI.match(line)
    return found is not None and found.group(1) == b"P"


def _partial_records(block: bytes) -> dict[int, int]:
    """The newline after each partial container-runtime record, with the next record's prefix."""
    joins = {}
    for found in _CRI.finditer(block):
        if found.group(1) != b"P" or (found.start() and block[found.start() - 1] != 10):
            continue
        end = block.find(b"\n", found.end())
        following = _CRI.match(block, end + 1) if end >= 0 else None
        if following is not None:
            joins[end] = following.end() - end - 1  # the next record's prefix goes
    return joins


# The key the scanner searches needles in: lower case; digits removed (logs repeat lines with
# other numbers); quotes, dashes, brackets, the punctuation that spacing varies around, and
# anything not ASCII (a typographic quote or dash, a no-break space) turned into a blank; blanks as
# one space. Needles get the same treatment, so a needle is found whatever the spacing and quoting
# of the line, and the regex on the normalised line decides.
_KEY_BLANKS = b"\t'\"\\`&#;:,[]-" + bytes(range(128, 256))  # and the backslash of \" in a quoted string
# lower case folded into the same table: one pass over a block, not two
KEY_TABLE = bytes(32 if b in _KEY_BLANKS else b + 32 if 65 <= b <= 90 else b for b in range(256))
KEY_DELETE = b"0123456789"
_HTML_ENTITY = re.compile(rb"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")


def search_key(data: bytes) -> bytes:
    """``data`` folded as described above (newlines are kept, so lines stay lines)."""
    return collapse_blanks(data.translate(KEY_TABLE, KEY_DELETE))


def collapse_blanks(data: bytes) -> bytes:
    while b"  " in data:
        data = data.replace(b"  ", b" ")
    return data


def decode_entities(block: bytes) -> bytes:
    """HTML entities in ``block`` decoded (a page's ``&#39;`` is a quote); others left alone."""
    for _ in range(2):  # a page that escaped its text twice shows &amp;#39;
        if b"&" not in block:
            break
        block = _HTML_ENTITY.sub(_byte_entity, block)
    return block


def _byte_entity(found: re.Match[bytes]) -> bytes:
    raw = found.group(0).decode("ascii")
    decoded = html.unescape(raw)
    return decoded.encode("utf-8") if decoded != raw and decoded.isprintable() else found.group(0)
