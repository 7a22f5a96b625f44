"""Found messages turned into explanations: the pattern's texts filled in, plus what the machine
adds (``machine``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envcheck.explain.catalogue import fill, fill_fix
from envcheck.explain.scanner import ScanResult
from envcheck.findings import Fix




@dataclass(frozen=True)
class Explanation:
    """One known message, explained, with what this machine adds."""

    id: str
    title: str
    harmless: bool
    meaning: str
    cause: str
    fix: Fix
    rule_ids: tuple[str, ...]
    sources: tuple[str, ...]
    count: int
    first_line: int
    line_numbers: tuple[int, ...]
    excerpt: str
    variables: dict[str, str]
    machine: tuple[Any, ...] = ()  # machine.MachineNote

    def to_dict(self) -> dict[str, Any]:
        from envcheck.findings import fix_to_dict

        return {
            "id": self.id,
            "title": self.title,
            "harmless": self.harmless,
            "meaning": self.meaning,
            "cause": self.cause,
            "fix": fix_to_dict(self.fix),
            "rule_ids": list(self.rule_ids),
            "sources": list(self.sources),
            "count": self.count,
            "first_line": self.first_line,
            "line_numbers": list(self.line_numbers),
            "excerpt": self.excerpt,
            "variables": dict(self.variables),
            "on_this_machine": [note.to_dict() for note in self.machine],
        }


def explain(result: ScanResult, ctx: Any = None) -> tuple[Explanation, ...]:
    """Fill each found pattern's texts and add machine-specific notes when ``ctx`` has facts."""
    from envcheck.explain.machine import MachineNote, notes_for

    explanations = []
    for occurrence in result.occurrences:
        pattern, variables = occurrence.pattern, occurrence.variables
        notes: tuple[Any, ...] = ()
        if ctx is not None:
            try:
                notes = notes_for(occurrence, ctx)
            except Exception as exc:  # noqa: BLE001 - one broken specializer must not hide the explanation
                notes = (MachineNote(f"envcheck could not add advice for this machine ({type(exc).__name__}: {exc}); this is a bug."),)
        harmless = pattern.harmless
        for note in notes:
            if note.harmless is not None:
                harmless = note.harmless
        explanations.append(
            Explanation(
                id=pattern.id,
                title=occurrence.title,
                harmless=harmless,
                meaning=fill(pattern.meaning, variables),
                cause=fill(pattern.cause, variables),
                fix=fill_fix(pattern.fix, variables),
                rule_ids=pattern.rule_ids,
                sources=pattern.sources,
                count=occurrence.count,
                first_line=occurrence.first_line,
                line_numbers=tuple(occurrence.line_numbers),
                excerpt=occurrence.excerpt,
                variables=dict(variables),
                machine=notes,
            )
        )
    explanations.sort(key=lambda e: (e.harmless, e.first_line))
    return tuple(explanations)
