"""A pattern's regexes: checked when the catalogue loads (bounded repeats, the normal form every
line is read in), compiled when first used, each with the literal text every match holds so a
line that lacks it is never run against the regex."""

from __future__ import annotations

import re
from typing import Any, Optional

from envcheck.explain import regex_guard


class RegexProblem(ValueError):
    """Why a regex of a patterns file cannot be used (the loader adds the file, line and field)."""


class Regex:
    """A pattern's regex (matched without regard to case): checked when the file loads, compiled
    when first used, so a scan compiles only the regexes of the messages it meets."""

    __slots__ = ("pattern", "groupindex", "_clauses", "_compiled")

    def __init__(
        self,
        pattern: str,
        groupindex: dict[str, int],
        compiled: Optional[re.Pattern[str]] = None,
        clauses: Optional[tuple[tuple[bytes, ...], ...]] = (),
    ) -> None:
        self.pattern = pattern
        self.groupindex = groupindex
        self._clauses = clauses  # None: read from the parsed regex when first needed
        self._compiled = compiled

    @property
    def clauses(self) -> tuple[tuple[bytes, ...], ...]:
        """Every match holds one string of each clause (lower case)."""
        if self._clauses is None:
            self._clauses = _required_literals(_sre_parse().parse(self.pattern, re.IGNORECASE))
        return self._clauses

    def may_match(self, lowered_line: bytes) -> bool:
        """False when the (lower-cased) line lacks text that every match holds: no need to run it."""
        for clause in self.clauses:
            for literal in clause:
                if literal in lowered_line:
                    break
            else:
                return False
        return True

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, re.IGNORECASE)  # messages change case between releases
        return self._compiled

    def search(self, text: str) -> Optional[re.Match[str]]:
        return self.compiled.search(text)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"


def compile_regex(source: str, eager: bool) -> Regex:
    """The checked ``Regex`` for ``source``; ``eager`` also compiles it and holds it to every rule
    (a user's file). Raises ``RegexProblem`` with the reason."""
    nested = regex_guard.nesting_problem(source)
    if nested:
        raise RegexProblem(f"{source!r}: {nested}")
    if not eager:
        # The bundled catalogue: the test suite parses, compiles and checks every regex of it, so
        # at start-up only the group names are read (templates need them), and the parse that
        # finds a regex's literals waits for the first line that reaches it (parsing all 800 of
        # them took about 50 ms of the 0.6 s `envcheck explain` takes on one pasted line).
        return Regex(source, dict.fromkeys(_GROUP_NAME.findall(source), 0), None, None)
    try:
        parsed = _sre_parse().parse(source, re.IGNORECASE)
        compiled = re.compile(source, re.IGNORECASE) if eager else None
    except re.error as exc:
        raise RegexProblem(f"{source!r} does not compile: {exc}") from None
    literals = _required_literals(parsed)
    # The bundled catalogue's regexes are held to every rule by the test suite; a user's here.
    problem = (regex_guard.parsed_problem(parsed) or _normal_form_problem(source, literals)) if eager else None
    if problem:
        raise RegexProblem(f"{source!r}: {problem}")
    return Regex(source, dict(parsed.state.groupdict), compiled, literals)


_GROUP_NAME = re.compile(r"(?<!\\)\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")


def _normal_form_problem(source: str, literals: tuple[tuple[bytes, ...], ...]) -> Optional[str]:
    """Why a regex can never match a normalised line (see ``normalise``), or None: text it must
    match (its literal runs) that the normal form never holds."""
    runs = [run for clause in literals for run in clause]
    for written, why in (
        (b"  ", "two spaces: every run of blanks reads as one space"),
        (b" :", "a space before ':': the normal form has none"),
        (b" ;", "a space before ';': the normal form has none"),
        (b"\t", "a tab: every tab reads as a space"),
    ):
        if any(written in run for run in runs):
            return f"{why}; write the regex against the normal form"
    odd = next((c for c in source if c in "\u2018\u2019\u201c\u201d\u2013\u2014\u00a0"), None)
    if odd is not None:
        return f"{odd!r}: typographic quotes, dashes and spaces read as their ASCII forms"
    return None


def _required_literals(parsed: Any) -> tuple[tuple[bytes, ...], ...]:
    """What every match of a parsed regex contains, as clauses of alternatives: each run of
    literal characters it must match (lower-cased, ASCII only), and for an alternation that must
    match, the first such run of each branch. Used to skip regexes on lines that cannot match."""
    sre = _sre_parse()
    clauses: list[tuple[bytes, ...]] = []

    def runs(items: Any, required: bool) -> list[bytes]:
        """The literal runs an item sequence must match, in order. Alternations inside it add a
        clause only when the sequence itself is required (not one branch of an outer choice)."""
        found: list[bytes] = []
        current: list[int] = []

        def flush() -> None:
            if len(current) >= 3:
                found.append(bytes(current).lower())
            current.clear()

        for op, value in items:
            if op == sre.LITERAL and value < 128:
                current.append(value)
                continue
            flush()
            if op == sre.SUBPATTERN:
                found.extend(runs(value[-1], required))
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and value[0] >= 1:
                found.extend(runs(value[2], required))
            elif op == sre.BRANCH and required:
                firsts = [runs(branch, False) for branch in value[1]]
                if firsts and all(firsts):
                    clauses.append(tuple(sorted({f[0] for f in firsts})))
        flush()
        return found

    clauses.extend((run,) for run in runs(parsed, True))
    return tuple(dict.fromkeys(clauses))


def _sre_parse() -> Any:
    return regex_guard._sre_parse()


def repeat_problem(source: str) -> Optional[str]:
    """Why a regex could backtrack for long (see ``regex_guard``), or None."""
    return regex_guard.repeat_problem(source)
