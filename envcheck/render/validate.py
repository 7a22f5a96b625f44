"""validate's report as text: one line per check with its figures, the notes, the doctor's
verdict and validate's own; colour (rich markup) only when asked for."""

from __future__ import annotations

from rich.markup import escape

from envcheck.printable import printable
from envcheck.render.terminal import console_for, print_markup
from envcheck.render.width import terminal_width


def render_validation(report, color: bool = False, width: int | None = None) -> str:
    console = console_for(width or terminal_width(), color)
    print_validation(report, console)
    return console.file.getvalue()


def print_validation(report, console) -> None:
    """Each line at the console's width, its continuation under the text after its label."""
    for line in validation_lines(report):
        print_markup(console, line)


def validation_lines(report) -> list[str]:
    """The report as rich markup lines (values from the machine are escaped)."""
    lines = []
    for check in report.checks:
        mark = "[green]PASS[/]" if check.passed else "[bold red]FAIL[/]"
        took = f" [dim]({check.seconds:.1f} s)[/]" if check.seconds is not None else ""
        lines.append(f"{mark}  level {check.level}  {_shown(check.name)}: {_shown(check.summary)}{took}")
    lines += [f"[dim]note: {_shown(note)}[/]" for note in report.notes]
    if report.doctor is not None:
        lines.append(f"[dim]doctor: {_shown(report.doctor.get('line'))}[/]")
    lines.append(_last_line(report))
    return lines


def _last_line(report) -> str:
    failed = [c for c in report.checks if not c.passed]
    where = "on the GPU" if report.used_gpu else "on the CPU"
    if failed:
        return f"[bold red]validation failed[/]: {len(failed)} of {len(report.checks)} checks"
    if report.problems:
        return f"[bold red]validation not passed[/]: the checks passed {where}, but " + _shown(
            "; ".join(report.problems)
        )
    return f"[bold green]validation passed[/]: {len(report.checks)} checks up to level {report.level}, {where}"


def _shown(text) -> str:
    """A value in rich markup: its control characters escaped, its brackets never read as markup
    (an error text with "[/]" in it would otherwise stop the report)."""
    return escape(printable(str(text)))
