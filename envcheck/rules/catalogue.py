"""The rule catalogue as Markdown (docs/rules.md): ``python -m envcheck.rules.catalogue``."""

from __future__ import annotations

from envcheck.findings import LINK_NAMES, LINK_TITLES
from envcheck.rules.engine import RULES, load_rule_modules

INTRO = """# Rules

Every finding envcheck reports comes from one rule with a stable id. Ids are never reused or
renumbered; new rules are added at the end of their prefix. Select or skip rules by id prefix with
`envcheck doctor --select EC-LIB` or `--ignore EC-ENV-007`.

The prefix names the link of the causal chain the rule checks. The first broken link becomes the
verdict; errors it causes further down the chain are shown under it. Severities are the defaults:
some rules report a lower one when the problem does not stop the GPU (for example `EC-DRV-001` is
a warning while the driver still runs CUDA through minor-version compatibility).
"""


def render() -> str:
    load_rule_modules()
    lines = [INTRO]
    for link in LINK_NAMES:
        rules = sorted((r for r in RULES.values() if r.link == link), key=lambda r: r.id)
        if not rules:
            continue
        lines.append(f"\n## {LINK_TITLES[link]}\n")
        lines.append("| id | severity | checks |")
        lines.append("|----|----------|--------|")
        for r in rules:
            about = r.title + (f". {_first_sentence(r.doc)}" if r.doc else "")
            lines.append(f"| `{r.id}` | {r.severity.value} | {about.replace('|', '/')} |")
    lines.append(
        "\n`EC-INT-001` (warning) is envcheck's own: a rule that crashed. The other rules still ran; "
        "please report it with the `--traceback` output.\n"
    )
    return "\n".join(lines)


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


if __name__ == "__main__":
    print(render(), end="")
