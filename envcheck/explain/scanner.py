"""Error text in, known messages out: the pattern catalogue and a scanner of bounded cost.

The catalogue is data (``explain_patterns.yaml``, loaded and validated by ``catalogue``):
each pattern names the message, what it means, whether it is harmless, its cause, its fix and the
doctor's rule ids. This module scans text for the patterns and turns what it found into
explanations; what the machine itself adds to a fix lives in ``machine``.

The scanner has to cope with whatever people paste or point it at: a 100 MB training log, binary
bytes, a line of a million characters. So it reads fixed-size chunks, looks at most
``MAX_LINE_BYTES`` of any line, finds candidate lines with plain substring searches (``needles``)
and runs a pattern's regexes only on lines that contain one of its needles. Messages change case
between releases ("Could not load" / "could not load"), so needles are lower case and are searched
in a lower-cased copy of each chunk (one pass per chunk, positions unchanged: ASCII only), and the
regexes ignore case. Regexes are compiled once and may not contain unbounded or nested repeats, so
no line can make one backtrack for long.

Each substring search is a pass over the chunk, and logs repeat themselves with different numbers
(timestamps, steps, progress bars, the same warning every batch), so the passes run over a chunk's
distinct lines with their digits removed, and only the lines of a group that holds a needle are
looked at, each distinct line once. Each pass also has a gate: a word of its string that every
line holding the string holds whole; a pass whose gate word the text lacks is skipped.
"""

from __future__ import annotations

import codecs
import io
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import IO, Any, Optional

from envcheck.explain.catalogue import Pattern, default_path, fill
from envcheck.explain.catalogue_file import parse_catalogue, read_catalogue
from envcheck.explain.context import read_context
from envcheck.explain.normalise import (
    KEY_DELETE,
    KEY_TABLE,
    at_prompt,
    collapse_blanks,
    decode_entities,
    decode_envelopes,
    is_partial_record,
    join_partial_records,
    join_terminal_cuts,
    learn_wrapper,
    may_be_cut,
    normalise_line,
    prompt_answers,
    search_key,
    strip_colour,
    strip_wrappers,
    wrapped_lines,
    wrapped_runs,
)
from envcheck.explain.parts import another_programs_line, in_stack_frame, read_parts, shows_stack_frame
from envcheck.explain.regexes import Regex

# Control bytes that text never holds (tab, newline, form feed, carriage return, backspace and
# escape, which progress bars and coloured logs use, are text).
_DIGITS = b"0123456789"
# Bytes that end a word: everything but lower-case ASCII letters and digits (the text is lowered).
_WORD_BREAKS = bytes(b if (48 <= b <= 57 or 97 <= b <= 122) else 32 for b in range(256))
_WORD = re.compile(rb"[a-z0-9]+")
# Words too frequent in logs to be worth a gate; a gate is better long and uncommon.
_COMMON_WORDS = frozenset(
    b"a an and are as at be by can could cuda device devices dll error failed file for found from gpu has"
    b" import in is it lib library load loaded module named no not of on or so the this to tensorflow"
    b" version was with".split()
)
_CONTROL = bytes(b for b in range(32) if b not in (8, 9, 10, 12, 13, 27)) + b"\x7f"

WRAPS_EVERYWHERE_BYTES = 256 * 1024  # a chunk this small is looked at for wraps on every line
MAX_CARRIED_LINES = 8  # the last lines of a chunk kept for the next (a cut line, partial records)
CONTEXT_BYTES = 64 * 1024  # the head and the tail of the input that its context is read from
MAX_LINE_BYTES = 8192  # every known message fits in far less; longer lines are cut here
CHUNK_BYTES = 1 << 20
MAX_JOINED = 64  # wrapped messages read joined that the log's context is read in too
MAX_GROUPS = 500  # distinct explanations kept from one input; the rest are only counted
MAX_LINE_NUMBERS = 5  # line numbers remembered per explanation
EXCERPT_CHARS = 300
END_LINES = 3  # the input's last non-blank lines read for a report printed once a program ended


# --- the catalogue -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalogue:
    path: Path
    patterns: tuple[Pattern, ...]
    anchors: tuple[str, ...] = ()  # shared substrings of many needles (the file's ``anchors``)

    def __post_init__(self) -> None:
        # Each anchor costs one pass over the input. A needle that contains an anchor, or another
        # needle, needs no pass of its own: every line holding it also holds the shorter string.
        # A candidate line is then checked for a pattern's own needles (a substring test) before
        # any of its regexes run.
        # The passes run over lines without their digits (see ``_scan_block``), so they look for
        # the needles without theirs.
        stripped = [tuple(search_key(n.encode("ascii")) for n in p.needles) for p in self.patterns]
        needles = {n for ns in stripped for n in ns} | {search_key(a.encode("ascii")) for a in self.anchors}
        needles.discard(b"")
        distinct = sorted(needles)
        contains_another = set()
        for shorter, holders in _holders(distinct, distinct).items():
            contains_another.update(i for i in holders if distinct[i] != shorter)
        anchors = [n for i, n in enumerate(distinct) if i not in contains_another]
        flat = [n for ns in stripped for n in ns if n]
        owner = [i for i, ns in enumerate(stripped) for n in ns if n]
        by_anchor = []
        for anchor, holders in _holders(flat, anchors).items():
            indexes = tuple(sorted({owner[h] for h in holders}))
            if indexes:
                by_anchor.append((anchor, gate_word(anchor), indexes))
        object.__setattr__(self, "_anchors", tuple(by_anchor))
        object.__setattr__(self, "_needles", tuple(tuple(n for n in ns if n) for ns in stripped))
        object.__setattr__(self, "_fallbacks", frozenset(i for i, p in enumerate(self.patterns) if p.fallback))
        object.__setattr__(self, "_at_end", tuple(p for p in self.patterns if p.at_end))
        object.__setattr__(self, "_owners", None)  # {status name: pattern}, when a fallback first reads a status

    def status_owner(self, status_name: str) -> Optional[Pattern]:
        """The pattern that names ``status_name`` (or its twin in the other CUDA API) outright, if any."""
        owners: Optional[dict[str, Pattern]] = self._owners  # type: ignore[attr-defined]
        if owners is None:
            owners = status_owners(self.patterns)
            object.__setattr__(self, "_owners", owners)
        return owners.get(status_name.upper())

    @property
    def gates(self) -> dict[str, str]:
        """Each pass's string (without digits) and its gate word ("" when it has none)."""
        return {a.decode("ascii"): g.decode("ascii") for a, g, _ in self._anchors}  # type: ignore[attr-defined]

    def get(self, pattern_id: str) -> Optional[Pattern]:
        return next((p for p in self.patterns if p.id == pattern_id), None)

    def scan_text(self, text: str) -> "ScanResult":
        return self.scan(io.BytesIO(text.encode("utf-8", "surrogateescape")))

    def scan(
        self, stream: IO[bytes], max_line_bytes: int = MAX_LINE_BYTES, chunk_bytes: int = CHUNK_BYTES
    ) -> "ScanResult":
        """Every known message in ``stream``, read in chunks; memory stays near ``chunk_bytes``."""
        found = _Accumulator(self.status_owner)
        lines_before = 0
        total = 0
        last_block_ended_line = True
        first = last = b""  # what the log says about itself is read from its first and last chunk
        # the last lines read so far, the number of lines before them, and whether any before them held text
        ending, ending_starts, earlier = b"", 0, False
        for block in _blocks(_as_utf8(stream), chunk_bytes, max_line_bytes):
            size = len(block)
            block = strip_colour(block)
            if size <= WRAPS_EVERYWHERE_BYTES:
                block = decode_envelopes(block)  # a JSON record or a Python repr holding the output
            # A wrapper's prefix on every line (learned from the first lines), and a pasted block a
            # terminal cut at its width (the columns are the prefixed line's)
            wrapper = learn_wrapper(block)
            if size <= WRAPS_EVERYWHERE_BYTES:
                block = join_terminal_cuts(block, wrapper)
            block = strip_wrappers(block, wrapper, size <= WRAPS_EVERYWHERE_BYTES)
            pieces = (ending + block).rsplit(b"\n", END_LINES + 1)
            if len(pieces) > END_LINES + 1:
                earlier = earlier or bool(pieces[0].strip())
                pieces = pieces[1:]
            ending = b"\n".join(pieces)
            ending_starts = lines_before + block.count(b"\n") - ending.count(b"\n")
            if len(first) < CONTEXT_BYTES:
                first += block[: CONTEXT_BYTES - len(first)]
            else:
                last = (last + block[-CONTEXT_BYTES:])[-CONTEXT_BYTES:]
            total += size
            # Joining keeps every line's number; the count of lines is the original block's.
            self._scan_block(decode_entities(block), lines_before, max_line_bytes, found)
            lines_before += block.count(b"\n")
            last_block_ended_line = block.endswith(b"\n")
        lines = lines_before + (0 if last_block_ended_line else 1)
        self._scan_ending(ending, ending_starts, earlier, max_line_bytes, found)
        head, tail = first.decode("utf-8", "replace"), last.decode("utf-8", "replace")
        # What a wrapped message says is read as its program printed it: joined.
        context = read_context(_with_runs_joined(head, found.joined), tail)
        # A loader's generic message on a line that names no part of the stack is kept only when
        # the input does (a traceback through site-packages/tensorflow, a CUDA library line).
        found.subjects_elsewhere(head, tail)
        # Another program's own line (OpenCV's cuDNN error, hashcat's driver call) frames nothing.
        framed = bool(found.unframed) and (shows_stack_frame(head) or shows_stack_frame(tail))
        return ScanResult(found.ordered(framed), lines=lines, bytes=total, dropped=found.dropped, context=context)

    def _scan_block(self, block: bytes, lines_before: int, max_line: int, found: "_Accumulator") -> None:
        # Logs repeat themselves with different numbers (timestamps, steps, progress bars, the
        # same warning per batch): lines are grouped by their text without digits, the substring
        # passes run once over the distinct groups, and only a group that holds a needle has its
        # lines looked at, each distinct line once, its match counting for every line repeating it.
        lines, keys, distinct = _split(block)
        if any(b"stderr p " in key or b"stdout p " in key for key in distinct):
            # A container runtime's partial records (looked for in the distinct lines, not the block)
            lines, keys, distinct = _split(join_partial_records(block))
        candidates, joined, collapsed = self._candidates(distinct, block, max_line)
        groups: dict[bytes, list[int]] = {}
        if candidates:
            raw: dict[bytes, list[int]] = {}
            for index, key in enumerate(keys):
                raw.setdefault(key, []).append(index)
            for key, folded in collapsed.items():  # the distinct lines: few in a log
                # keys that fold alike (other spacing or quotes) share a group; usually each is its own
                groups[folded] = raw[key] if folded not in groups else groups[folded] + raw[key]
        hits: dict[bytes, set[int]] = {}  # each distinct candidate line -> the patterns it matched
        statements: set[int] = set()  # candidate lines typed at a prompt, read with their answers below
        matched_lines = 0
        for start in sorted(candidates):
            end, indexes = candidates[start]
            originals: dict[bytes, list[int]] = {}  # each distinct line of the group -> its indexes
            for index in groups[joined[start:end]]:
                originals.setdefault(lines[index], []).append(index)
            for line, where in originals.items():
                numbers = [lines_before + i + 1 for i in where[:MAX_LINE_NUMBERS]]
                hits[line] = self._match_line(line[:max_line], numbers, len(where), indexes, found)
                matched_lines += len(where) if hits[line] else 0
                # the statement itself, or a statement a terminal cut that goes on in this line
                # (prompt_answers joins up to three lines)
                for index in where[:MAX_LINE_NUMBERS]:
                    first = next((j for j in range(index, max(-1, index - 4), -1) if at_prompt(lines[j])), None)
                    if first is not None:
                        statements.add(first)
        # A pasted message may be hard-wrapped anywhere. A large log (a program's, not wrapped) is
        # looked at only around the lines that hold a needle, and not at all when every line of it
        # is a message already read (two messages on consecutive lines are two).
        if len(block) > WRAPS_EVERYWHERE_BYTES and matched_lines == len(lines):
            return
        around = None if len(block) <= WRAPS_EVERYWHERE_BYTES else _around(candidates, groups, joined, len(lines))
        fallbacks = self._fallbacks  # type: ignore[attr-defined]
        fragments: set[int] = set()
        pair_hits: dict[int, set[int]] = {}  # each pair's first line -> what the pair read joined
        pairs = [(where, 2, (text,), False) for where, text in wrapped_lines(lines, around)]
        for number, (where, length, texts, trusted) in enumerate(pairs + wrapped_runs(lines, around)):
            # A message cut over two lines (or a run of them): read them joined for what none holds.
            start = where[0]
            run = [lines[i] for i in range(start, start + length)]
            known = set().union(*(hits.get(line, set()) for line in run))
            # a run of lines: what the pairs inside it read joined is read
            known.update(*(pair_hits.get(i, set()) for i in range(start, start + length - 1)))
            # A line one pattern explains is explained: a fallback is not tried on it joined either.
            # A run a width shows (a terminal cut words in two) is read whole, fallbacks included,
            # unless one of its lines holds a message a pattern of its own explains.
            is_run = number >= len(pairs)
            skip = known | fallbacks if known and (not is_run or known - fallbacks) else known
            read: set[int] = set()
            for text in texts:
                wanted = tuple(i for i in self._patterns_in(search_key(text[:max_line])) if i not in skip | read)
                if not wanted:
                    continue
                numbers = [lines_before + index + 1 for index in where[:MAX_LINE_NUMBERS]]
                matched = self._match_line(text[:max_line], numbers, len(where), wanted, found)
                read |= matched
                if matched and len(found.joined) < MAX_JOINED:
                    joined_text = text[:max_line].decode("utf-8", "replace")
                    found.joined.extend((n, length, joined_text) for n in numbers)
                if matched - fallbacks or (is_run and matched):
                    # the message read joined: what a fallback read in one of its lines alone (a
                    # status the cut message names) is part of it
                    for offset, part in enumerate(run):
                        if hits.get(part) and hits[part] <= fallbacks and (offset or matched - fallbacks):
                            fragments.update(n + offset for n in numbers)
            if number < len(pairs):
                for index in where:
                    pair_hits.setdefault(index, set()).update(read)
            elif trusted:
                # The run is the line its program printed: what a part of it read alone, and the
                # whole does not, is a fragment (a dlerror's tail read apart from its loader line).
                whole = _Accumulator(self.status_owner)
                mine = set()
                for text in texts:
                    every = self._patterns_in(search_key(text[:max_line]))
                    mine |= self._match_line(text[:max_line], [1], 1, tuple(every), whole)
                    # and the statuses it names, each read apart (the run may hold two messages)
                    self._match_line(text[:max_line], [1], 1, tuple(i for i in every if i in fallbacks), whole)
                if not mine - fallbacks:
                    continue  # the whole reads no message of its own: not a run to trust over its parts
                kept = {key[0] for key in whole._by_key}
                for first in where[:MAX_LINE_NUMBERS]:
                    inside = set(range(lines_before + first + 1, lines_before + first + 1 + length))
                    found.forget_inside(inside, kept)
        if fragments:
            found.forget_fallbacks_on(fragments)
        if statements:
            # A statement at Python's prompt and the value printed under it, read together.
            for where, text in prompt_answers(lines, statements):
                known = hits.get(lines[where[0]], set())
                wanted = tuple(i for i in self._patterns_in(search_key(text[:max_line])) if i not in known)
                if wanted:
                    numbers = [lines_before + index + 1 for index in where[:MAX_LINE_NUMBERS]]
                    self._match_line(text[:max_line], numbers, len(where), wanted, found)

    def _scan_ending(
        self, block: bytes, lines_before: int, earlier: bool, max_line: int, found: "_Accumulator"
    ) -> None:
        """The input's last lines, read for the reports printed once a program has ended (``at_end``
        patterns): a shell's "Killed" or "Segmentation fault", a bare exit code or signal name. Such
        a report is a word or a number alone on its line, which no needle can find cheaply, and it
        comes last, after everything the program printed (at most a prompt follows it). A line that
        holds a needle was read by the passes. When the input is nothing but such reports (one
        pasted alone), they are what was asked about: a ``stack_only`` crash is explained then."""
        patterns: tuple[Pattern, ...] = self._at_end  # type: ignore[attr-defined]
        if not patterns or not block:
            return
        numbered = [(lines_before + i + 1, line) for i, line in enumerate(block.split(b"\n")) if line.strip()]
        ending = numbered[-END_LINES:]
        reports: set[int] = set()
        for number, line in ending:
            line = line[:max_line]
            if self._patterns_in(search_key(line)):
                continue
            text = normalise_line(line.decode("utf-8", "replace").rstrip("\r"))
            for pattern in patterns:
                hit = next((m for r in pattern.regexes if (m := r.compiled.search(text))), None)
                if hit is not None and found.add(pattern, hit, [number], 1, text):
                    reports.add(number)
        if earlier or len(numbered) > len(ending):
            return
        reports.update(found.lines_of(lambda o: o.pattern.at_end))
        if all(number in reports for number, _ in ending):
            found.frame(lambda o: o.pattern.at_end)

    def _candidates(
        self, distinct: list[bytes], block: bytes, max_line: int
    ) -> tuple[dict[int, tuple[int, tuple[int, ...]]], bytes, dict[bytes, bytes]]:
        """The groups of lines that hold a pass's string: {start in the joined distinct keys: (end,
        pattern indexes)}, those joined keys, and each line's key with its blanks collapsed (done
        on the distinct lines only: a log repeats itself)."""
        if (len(block) - len(block.translate(None, _CONTROL))) * 50 > len(block):
            # Binary bytes in the chunk: no message holds control bytes, so only lines of text
            # (at most two stray control bytes) are searched.
            distinct = [key for key in distinct if len(key) - len(key.translate(None, _CONTROL)) <= 2]
        joined = collapse_blanks(b"\n".join(distinct).translate(KEY_TABLE))
        collapsed = dict(zip(distinct, joined.split(b"\n")))
        # A pass whose gate word the text lacks cannot find its string: skip it. Collecting the
        # words costs about one pass, and unlike ordinary words the gates are rare.
        words = set(joined.translate(_WORD_BREAKS).split())
        candidates: dict[int, tuple[int, tuple[int, ...]]] = {}
        for anchor, gate, indexes in self._anchors:  # type: ignore[attr-defined]
            if gate and gate not in words:
                continue
            position = joined.find(anchor)
            while position >= 0:
                start = joined.rfind(b"\n", 0, position) + 1
                end = joined.find(b"\n", position)
                if end < 0:
                    end = len(joined)
                if position + len(anchor) <= start + max_line:
                    entry = candidates.get(start)
                    candidates[start] = (end, indexes if entry is None else tuple(sorted({*entry[1], *indexes})))
                position = joined.find(anchor, end + 1)
        return candidates, joined, collapsed

    def _patterns_in(self, key: bytes) -> list[int]:
        """The patterns a pass finds in one line's search key."""
        found: set[int] = set()
        for anchor, _, indexes in self._anchors:  # type: ignore[attr-defined]
            if anchor in key:
                found.update(indexes)
        return sorted(found)

    def _match_line(
        self, head: bytes, numbers: list[int], count: int, indexes: tuple[int, ...], found: "_Accumulator"
    ) -> set[int]:
        """Run the regexes of the patterns whose needles the line holds on its normal form; the
        indexes of the patterns that matched."""
        key = search_key(head)
        own_needles = self._needles  # type: ignore[attr-defined]
        text = lowered = record = record_lowered = None
        hits: set[int] = set()
        fallbacks = self._fallbacks  # type: ignore[attr-defined]
        # Fallbacks (a status of the CUDA stack named anywhere) last, and only if nothing else matched.
        for index in sorted(indexes, key=lambda i: i in fallbacks):
            if index in fallbacks and hits:
                break
            if not any(n in key for n in own_needles[index]):
                continue
            if text is None:
                text = normalise_line(head.decode("utf-8", "replace").rstrip("\r"))
                if another_programs_line(text):
                    return hits  # FFmpeg's own message about its encoder or decoder
                lowered = text.encode("utf-8", "replace").lower()
            pattern = self.patterns[index]
            read, read_lowered = text, lowered
            if pattern.record:  # a log record: its prefixes (severity, source file) are read too
                if record is None:
                    record = normalise_line(head.decode("utf-8", "replace").rstrip("\r"), keep_prefixes=True)
                    record_lowered = record.encode("utf-8", "replace").lower()
                read, read_lowered = record, record_lowered
            for regex in pattern.regexes:
                if not regex.may_match(read_lowered):
                    continue
                # A deriver may refuse a capture (a success status): then the next one counts.
                if any(
                    found.add(pattern, hit, numbers, count, read) for hit in islice(regex.compiled.finditer(read), 4)
                ):
                    hits.add(index)
                    break
        return hits


def _with_runs_joined(text: str, runs: list[tuple[int, int, str]]) -> str:
    """``text`` (the input's first lines) with each run of wrapped lines that a pattern read joined
    replaced by the joined line, its other lines left blank (so every line keeps its number)."""
    if not runs:
        return text
    lines = text.split("\n")
    for number, length, joined in runs:
        start = number - 1
        if start + length <= len(lines) and all(lines[i].strip() for i in range(start, start + length)):
            lines[start : start + length] = [joined] + [""] * (length - 1)
    return "\n".join(lines)


def _split(block: bytes) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(the block's lines, each line's key, the distinct keys in order). A key here has its digits
    deleted and is lower case, done on the whole block (the fast paths of both); the rest of the
    search key's folding (``search_key``) is done on the distinct lines only."""
    lines = block.split(b"\n")
    keys = block.translate(None, KEY_DELETE).lower().split(b"\n")  # same lines, same order
    if block.endswith(b"\n"):
        lines.pop()
        keys.pop()
    return lines, keys, list(dict.fromkeys(keys))


def _around(
    candidates: dict[int, tuple[int, tuple[int, ...]]], groups: dict[bytes, list[int]], joined: bytes, count: int
) -> Optional[list[int]]:
    """The indexes of the lines that hold a needle, or None (every line) when most lines do: then
    listing them costs more than looking at every pair."""
    where = [groups[joined[start : candidates[start][0]]] for start in candidates]
    if sum(len(indexes) for indexes in where) * 2 > count:
        return None
    return [i for indexes in where for i in indexes]


def _holders(strings: list[bytes], subs: list[bytes]) -> dict[bytes, list[int]]:
    """For each of ``subs`` (in order), the indexes of ``strings`` that contain it. One joined
    buffer and ``bytes.find`` instead of a test of every pair: a catalogue of a few thousand needles
    is read at every start, and the pairwise test was most of the start-up time."""
    joined = b"\n".join(strings)  # a needle is a part of one line: it holds no newline
    starts = []
    offset = 0
    for text in strings:
        starts.append(offset)
        offset += len(text) + 1
    found: dict[bytes, list[int]] = {}
    for sub in subs:
        holders: list[int] = []
        at = joined.find(sub)
        while at != -1:
            index = bisect_right(starts, at) - 1
            holders.append(index)
            at = joined.find(sub, starts[index + 1] if index + 1 < len(starts) else len(joined))
        found[sub] = holders
    return found


def gate_word(needle: bytes) -> bytes:
    """The word of ``needle`` that every line holding it holds as a whole word: one bounded by
    non-word characters inside the needle itself (so any occurrence has it whole), the least
    common and longest such; b"" when there is none (a one-word needle like "ptxas" can be part of
    a longer word in a line, so its pass always runs)."""
    words = [(m.group(0), m.start() > 0, m.end() < len(needle)) for m in _WORD.finditer(needle)]
    inside = [w for w, left, right in words if left and right]
    if not inside:
        return b""
    return min(inside, key=lambda w: (w in _COMMON_WORDS, -len(w)))


# --- results -------------------------------------------------------------------------------------


@dataclass
class Occurrence:
    """One known message (one pattern, one title) and where it appeared."""

    pattern: Pattern
    variables: dict[str, str]
    title: str
    first_line: int
    excerpt: str
    count: int = 0
    line_numbers: list[int] = field(default_factory=list)
    from_fallback: bool = False  # read by a fallback pattern (a status named anywhere)


@dataclass(frozen=True)
class ScanResult:
    occurrences: tuple[Occurrence, ...]
    lines: int = 0
    bytes: int = 0
    dropped: int = 0  # matches beyond MAX_GROUPS distinct explanations
    context: dict[str, str] = field(default_factory=dict)  # what the whole input shows (``context``)

    @property
    def ids(self) -> list[str]:
        return [o.pattern.id for o in self.occurrences]


# A status that a pattern names outright (a regex that is the status's name) belongs to that
# pattern in any spelling: by number, by the text the library prints, or under the other CUDA API's
# name for it (CUresult and cudaError_t share most statuses). A fallback that reads such a status
# hands the message to its owner, so "CUDA error: out of memory" gets the causes written for
# CUDA_ERROR_OUT_OF_MEMORY, not only the table's sentence.
# The name may follow a negative lookbehind that keeps another message's spelling of it out (the
# host's "bytes on host: CUDA_ERROR_OUT_OF_MEMORY" is pinned RAM, not the GPU's memory).
_BARE_NAME = re.compile(r"(?:\(\?<![^()]{1,80}\))?([A-Za-z_]{4,80})(?:\\b)?")
# Patterns that own their status's own name only, not its twin: TensorFlow's INVALID_HANDLE is a
# kernel whose module failed to load, while the runtime's "invalid resource handle" is as often a
# stream or event used on the wrong device.
_NO_TWINS = frozenset({"cuda-invalid-handle"})


def status_owners(patterns: tuple[Pattern, ...]) -> dict[str, Pattern]:
    """{upper-case status name: the pattern that owns it} (see above)."""
    # Imported here: the status tables are read only when a message names a status.
    from envcheck.explain.statuses import load_statuses

    tables = load_statuses()
    owners: dict[str, Pattern] = {}
    for pattern in patterns:
        if pattern.fallback or pattern.derive:
            continue  # an owner's templates must need nothing but what any spelling gives
        for regex in pattern.regexes:
            source = regex.compiled.pattern
            bare = _BARE_NAME.fullmatch(source)
            if bare:
                for status in tables.by_name(bare.group(1)):
                    for twin in (status,) if pattern.id in _NO_TWINS else tables.twins(status):
                        owners.setdefault(twin.name.upper(), pattern)
    return owners


class _Accumulator:
    def __init__(self, owner_of: Callable[[str], Optional[Pattern]] = lambda name: None) -> None:
        self._owner_of = owner_of
        self._by_key: dict[tuple[str, str], Occurrence] = {}
        self._by_groups: dict[tuple[Any, ...], Occurrence] = {}  # the same capture seen before
        self.dropped = 0
        # the runs of wrapped lines a pattern read joined: (first line's number, lines, text)
        self.joined: list[tuple[int, int, str]] = []
        self.unframed: set[tuple[str, str]] = set()  # stack_only messages seen only outside the stack's frame
        # subject_elsewhere messages on no line of the stack (with the regex of the pattern that
        # matched, a status fallback's before its status's owner takes the occurrence) ...
        self._subject_unframed: dict[tuple[str, str], Regex] = {}
        self._subject_framed: set[tuple[str, str]] = set()  # ... and those on a line that names it

    def add(self, pattern: Pattern, hit: re.Match[str], line_numbers: list[int], count: int, text: str) -> bool:
        """One matched line, seen ``count`` times, first at ``line_numbers`` (ascending, at most
        MAX_LINE_NUMBERS of them); False when the pattern's
        deriver refuses the capture (the line is then not this pattern's message)."""
        line_number = line_numbers[0]
        seen = (pattern.id, hit.re, hit.groups())
        occurrence = self._by_groups.get(seen)
        if occurrence is None:
            variables = pattern.variables(hit)
            if variables is None:
                return False
            subject = pattern.subject_elsewhere
            from_fallback = pattern.fallback
            if pattern.fallback and variables.get("status_name"):
                pattern = self._owner_of(variables["status_name"]) or pattern
            for name, value in read_parts(text, variables.get("library", "")).items():
                variables.setdefault(name, value)
            title = fill(pattern.title, variables)
            key = (pattern.id, title)
            occurrence = self._by_key.get(key)
            if occurrence is None:
                if len(self._by_key) >= MAX_GROUPS:
                    self.dropped += 1
                    return True
                occurrence = Occurrence(
                    pattern, variables, title, line_number, excerpt(text, hit), from_fallback=from_fallback
                )
                self._by_key[key] = occurrence
                if pattern.stack_only and not in_stack_frame(text):
                    self.unframed.add(key)  # another program's loader error, unless the input shows the stack
            else:
                if key in self.unframed and in_stack_frame(text):
                    self.unframed.discard(key)
                # the owner's own pattern read the message a fallback read first (a cut message
                # read joined): it stands on its own
                occurrence.from_fallback = occurrence.from_fallback and from_fallback
            subject = subject or pattern.subject_elsewhere
            if subject is not None:
                if in_stack_frame(text):
                    self._subject_framed.add(key)
                else:
                    self._subject_unframed.setdefault(key, subject)
            if len(self._by_groups) < 4 * MAX_GROUPS:
                self._by_groups[seen] = occurrence
        occurrence.count += count
        # Distinct lines of one message arrive group by group: keep the first line numbers overall.
        if len(occurrence.line_numbers) < MAX_LINE_NUMBERS or line_numbers[0] < occurrence.line_numbers[-1]:
            occurrence.line_numbers[:] = sorted({*occurrence.line_numbers, *line_numbers[:MAX_LINE_NUMBERS]})[
                :MAX_LINE_NUMBERS
            ]
        return True

    def forget_inside(self, numbers: set[int], kept: set[str]) -> None:
        """Drop what was read only on these lines (a run of wrapped lines) by a pattern not in
        ``kept`` (those that read the run joined)."""
        gone = {
            key
            for key, o in self._by_key.items()
            if o.pattern.id not in kept and o.line_numbers and set(o.line_numbers) <= numbers
        }
        for key in gone:
            occurrence = self._by_key.pop(key)
            self._by_groups = {k: v for k, v in self._by_groups.items() if v is not occurrence}
            self.unframed.discard(key)

    def forget_fallbacks_on(self, numbers: set[int]) -> None:
        """Drop what fallbacks read only on these lines (the halves of a cut message that another
        pattern explains joined)."""
        gone = {
            key
            for key, o in self._by_key.items()
            if o.from_fallback and o.line_numbers and set(o.line_numbers) <= numbers
        }
        for key in gone:
            occurrence = self._by_key.pop(key)
            self._by_groups = {k: v for k, v in self._by_groups.items() if v is not occurrence}
            self.unframed.discard(key)

    def subjects_elsewhere(self, *texts: str) -> None:
        """A generic message of a tool that serves many programs (``subject_elsewhere``), seen on
        no line that names the stack, counts as outside the stack's frame where the input names its
        subject and that subject is not the stack's (dkms' "Bad return status for module build"
        after "Consult /var/lib/dkms/rtl8821ce/..."): explained then only if the input shows the
        stack. Where the input names no subject, the message stays what it was asked about."""
        lowered: list[bytes] = []
        for key, regex in self._subject_unframed.items():
            if key in self._subject_framed:
                continue
            lowered = lowered or [text.lower().encode("utf-8", "replace") for text in texts]
            # a text that lacks what every subject holds ("/var/lib/dkms/", "assertion") is not searched
            searched = [text for text, low in zip(texts, lowered) if regex.may_match(low)]
            hits = (hit.group(0) for text in searched for hit in islice(regex.compiled.finditer(text), 16))
            if any(not in_stack_frame(subject) for subject in hits):
                self.unframed.add(key)

    def lines_of(self, which: Callable[[Occurrence], bool]) -> set[int]:
        """The line numbers kept for the occurrences ``which`` picks."""
        return {n for o in self._by_key.values() if which(o) for n in o.line_numbers}

    def frame(self, which: Callable[[Occurrence], bool]) -> None:
        """Count the occurrences ``which`` picks as in the stack's frame."""
        self.unframed = {key for key in self.unframed if not which(self._by_key[key])}

    def ordered(self, framed: bool = False) -> tuple[Occurrence, ...]:
        # Errors before harmless notices, each in the order they first appeared; a message that a
        # more specific one in the same input explains (``covered_by``) is left out, and so is a
        # loader's generic message seen only outside the stack's frame in an input that never
        # shows the stack (``framed`` false), and so is a log record read by its severity alone
        # where another message is explained.
        found = [o for k, o in self._by_key.items() if framed or k not in self.unframed]
        present = {o.pattern.id for o in found}
        kept = [o for o in found if not present.intersection(o.pattern.covered_by)]
        # A record read by its severity alone (``record``) is the background of a log: shown only
        # when no other message of the input is explained.
        if any(not o.pattern.record for o in kept):
            kept = [o for o in kept if not o.pattern.record]
        return tuple(sorted(kept, key=lambda o: (o.pattern.harmless, o.first_line)))


def excerpt(text: str, hit: re.Match[str]) -> str:
    """The line from where the message starts: a log prefix (time, level, source file) far before
    the match is dropped, and the rest is cut at EXCERPT_CHARS."""
    start = hit.start()
    if start > 40:
        bracket = text.rfind("] ", 0, start)
        start = bracket + 2 if bracket >= 0 and start - bracket <= 60 else start - 20
    else:
        start = 0
    piece = text[start:].strip()
    cut = len(piece) > EXCERPT_CHARS
    return ("…" if start else "") + piece[:EXCERPT_CHARS] + ("…" if cut else "")


# --- reading input -------------------------------------------------------------------------------


def _blocks(stream: IO[bytes], chunk_bytes: int, max_line: int) -> Iterator[bytes]:
    """``_line_blocks``, where a block's last line that may be cut (``may_be_cut``) moves to the
    next block, so that every pair of lines a wrap joins is in one block whatever the chunk size;
    each line is still in exactly one block."""
    carry = b""
    pending: Optional[bytes] = None  # a block is split only when another follows it
    for block in _whole_blocks(stream, chunk_bytes, max_line):
        if pending is not None:
            data = carry + pending if carry else pending
            carry = b""
            if data.endswith(b"\n"):
                data, carry = _last_lines_that_go_on(data, max_line)
            if data:
                yield data
        pending = block
    if pending is not None or carry:
        yield carry + (pending or b"")


def _last_lines_that_go_on(data: bytes, max_line: int) -> tuple[bytes, bytes]:
    """(``data`` less its last lines that may be cut or are a container runtime's partial
    records, the lines taken off). Every line of the run goes, not the last alone: a wrap joins a
    cut line with the next, so the last line's pair with the line before it stays in one block."""
    cut = len(data)
    for _ in range(MAX_CARRIED_LINES):
        start = data.rfind(b"\n", 0, cut - 1) + 1
        line = data[start : cut - 1]
        if not (is_partial_record(line) or may_be_cut(line)):
            break
        cut = start
        if start == 0:
            break
    return data[:cut], data[cut:]


def _whole_blocks(stream: IO[bytes], chunk_bytes: int, max_line: int) -> Iterator[bytes]:
    """``_line_blocks``, with an unfinished last line kept with the block before it (so a message
    pasted without a final newline and wrapped before its end is read like any other)."""
    previous = None
    for block in _line_blocks(stream, chunk_bytes, max_line):
        if previous is not None and not block.endswith(b"\n") and len(block) <= max_line:
            block, previous = previous + block, None
        if previous is not None:
            yield previous
        previous = block
    if previous is not None:
        yield previous


def _line_blocks(stream: IO[bytes], chunk_bytes: int, max_line: int) -> Iterator[bytes]:
    """Runs of whole lines. A line longer than ``max_line`` ends there: its head is kept as a line
    and the rest is skipped up to the next newline, so a single giant line costs no memory."""
    carry = b""
    skipping = False
    while True:
        chunk = stream.read(chunk_bytes)
        if not chunk:
            break
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                continue
            chunk = chunk[newline + 1 :]
            skipping = False
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        block, carry = data[:cut], data[cut:]
        if len(carry) > max_line:
            block += carry[:max_line] + b"\n"
            carry = b""
            skipping = True
        if block:
            yield block
    if carry:
        yield carry


class _Utf16ToUtf8:
    """PowerShell 5 writes redirected output as UTF-16 with a BOM; re-encode it chunk by chunk."""

    def __init__(self, stream: IO[bytes], head: bytes) -> None:
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
        self._pending = self._decoder.decode(head).encode("utf-8")

    def read(self, size: int) -> bytes:
        while len(self._pending) < size:
            chunk = self._stream.read(size)
            if not chunk:
                self._pending += self._decoder.decode(b"", final=True).encode("utf-8")
                break
            self._pending += self._decoder.decode(chunk).encode("utf-8")
        out, self._pending = self._pending[:size], self._pending[size:]
        return out


class _Prefixed:
    def __init__(self, stream: IO[bytes], head: bytes) -> None:
        self._stream = stream
        self._head = head

    def read(self, size: int) -> bytes:
        if self._head:
            out, self._head = self._head, b""
            return out
        return self._stream.read(size)


def _as_utf8(stream: IO[bytes]) -> Any:
    head = stream.read(2)
    if head in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return _Utf16ToUtf8(stream, head)
    return _Prefixed(stream, head)


# --- loading ------------------------------------------------------------------------------------

_CACHE: dict[Path, Catalogue] = {}


def load_patterns(path: str | Path | None = None) -> Catalogue:
    """The catalogue (the bundled one by default), validated and cached."""
    p = Path(path) if path is not None else default_path()
    cached = _CACHE.get(p)
    if cached is None:
        # The bundled file's regexes are compiled by the test suite; compile them when first used.
        patterns, anchors = read_catalogue(p, eager=p.resolve() != default_path().resolve())
        cached = _CACHE[p] = Catalogue(p, patterns, anchors)
    return cached


def parse_patterns(text: str, path: Path) -> Catalogue:
    patterns, anchors = parse_catalogue(text, path)
    return Catalogue(path, patterns, anchors)
