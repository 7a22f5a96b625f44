"""What a pattern's regex may do, so that no input line can make it run for long.

Python's regex engine backtracks: a repeat that can give characters back to the repeat after it
tries every split between them, so two overlapping repeats of N cost about N^2 steps at each
position of a line, four cost N^4 (``\\w{0,1000}`` four times ran for minutes on one 3,000
character line). The rules, checked when a catalogue loads (``--patterns`` included):

- every repeat is bounded (``{0,N}``, N <= MAX_REPEAT) and none is nested in another;
- an alternation inside a repeat has branches that start differently (else each repetition tries
  every branch: exponential);
- the work: in each run of consecutive repeats that can match the same characters, the product
  of their spans is at most MAX_WORK (a literal that the repeat before it cannot match ends a
  run). With lines cut at 8 KiB this bounds the steps one line can cost;
- groups nest at most MAX_NESTING deep (the regex parser recurses on them).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Optional

MAX_REPEAT = 1000  # the largest {m,n} a pattern's regex may use
MAX_WORK = 4000  # the largest product of overlapping repeats' spans (the bundled catalogue needs 3,900)
MAX_NESTING = 20
_ALL = frozenset(range(256)) | {-1}  # -1 stands for every character beyond Latin-1


def _sre_parse() -> Any:
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    return sre_parse


def nesting_problem(source: str) -> Optional[str]:
    """Too deep a nesting of groups, found without parsing (the parser recurses on it)."""
    depth = deepest = 0
    escaped = in_class = False
    for char in source:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    if deepest > MAX_NESTING:
        return f"groups nested {deepest} deep; at most {MAX_NESTING}"
    return None


def repeat_problem(source: str) -> Optional[str]:
    """Why a regex could backtrack for long, or None (parses ``source`` itself)."""
    return nesting_problem(source) or parsed_problem(_sre_parse().parse(source))


def parsed_problem(parsed: Any) -> Optional[str]:
    """Why a parsed regex could backtrack for long (see the module), or None."""
    return _walk(parsed, False) or _work_problem(parsed)


def _walk(items: Any, inside_repeat: bool) -> Optional[str]:
    sre = _sre_parse()
    for op, value in items:
        problem = None
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, sub = value
            if high == sre.MAXREPEAT or high > MAX_REPEAT:
                return f"unbounded repeat; write {{0,N}} with N <= {MAX_REPEAT} instead of * or +"
            if inside_repeat and high > 1:
                return "nested repeat (a repeated group containing a repeat) can backtrack for long"
            problem = _walk(sub, inside_repeat or high > 1)
        elif op == sre.SUBPATTERN:
            problem = _walk(value[-1], inside_repeat)
        elif op == sre.BRANCH:
            if inside_repeat and not _branches_start_apart(value[1]):
                return "an alternation inside a repeat whose branches can start alike backtracks exponentially"
            problem = next((p for p in (_walk(b, inside_repeat) for b in value[1]) if p), None)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            problem = _walk(value[1], inside_repeat)
        if problem:
            return problem
    return None


def _branches_start_apart(branches: Any) -> bool:
    starts = [_first_chars(list(b)) for b in branches]
    if any(s is None for s in starts):
        return False
    seen: set[int] = set()
    for chars in starts:
        if seen & chars:  # type: ignore[operator]
            return False
        seen |= chars  # type: ignore[operator]
    return True


def _first_chars(items: list) -> Optional[frozenset[int]]:
    sre = _sre_parse()
    while items and items[0][0] == sre.SUBPATTERN:
        items = list(items[0][1][-1]) + items[1:]
    return _charset(items[0]) if items else None


def _charset(item: Any) -> Optional[frozenset[int]]:
    """The characters one item matches (None when it is not a one-character item)."""
    sre = _sre_parse()
    op, value = item
    if op == sre.LITERAL:
        return _cased(value)
    if op == sre.NOT_LITERAL:
        return _ALL - _cased(value)
    if op == sre.ANY:
        return _ALL - {10}
    if op == sre.CATEGORY:
        return _category(value)
    if op == sre.IN:
        chars: set[int] = set()
        negate = False
        for inner, arg in value:
            if inner == sre.NEGATE:
                negate = True
            elif inner == sre.LITERAL:
                chars |= _cased(arg)
            elif inner == sre.RANGE:
                chars |= set(range(arg[0], min(arg[1], 255) + 1)) | ({-1} if arg[1] > 255 else set())
            elif inner == sre.CATEGORY:
                chars |= _category(arg)
        return _ALL - chars if negate else frozenset(chars)
    return None


@cache
def _cased(code: int) -> frozenset[int]:
    # patterns match without regard to case
    char = chr(code)
    return frozenset(ord(c) if ord(c) < 256 else -1 for c in {char, char.lower(), char.upper()})


_CATEGORY_TESTS = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W",
}  # fmt: skip


@cache
def _category(category: Any) -> frozenset[int]:
    test = re.compile(_CATEGORY_TESTS.get(str(category), r"[\s\S]"))
    chars = {c for c in range(256) if test.match(chr(c))}
    return frozenset(chars | ({-1} if test.match("\u4e00") else set()))


def work(parsed: Any) -> int:
    """The largest product of spans over a run of repeats that can match the same characters."""
    sre = _sre_parse()
    product, previous, worst = 1, None, 1

    def flat(items: Any):
        for op, value in items:
            if op == sre.SUBPATTERN:
                yield from flat(value[-1])
            else:
                yield op, value

    for op, value in flat(parsed):
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, sub = value
            sub = list(sub)
            chars = _charset(sub[0]) if len(sub) == 1 else None
            span = high - low + 1
            product = product * span if chars is not None and previous and chars & previous else span
            previous = chars
        elif op != sre.AT:
            chars = _charset((op, value))
            if not (chars and previous and chars <= previous):
                previous, product = None, 1  # a character the repeat before cannot give ends the run
        worst = max(worst, product)
    return worst


def _work_problem(parsed: Any) -> Optional[str]:
    cost = work(parsed)
    if cost > MAX_WORK:
        return (
            f"repeats that can match the same characters follow each other (their spans multiply to {cost:,}; "
            f"at most {MAX_WORK:,}): bound them more tightly, or put text between them that the first cannot match"
        )
    return None
