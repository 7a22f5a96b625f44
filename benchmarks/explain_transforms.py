"""Whether ``envcheck explain`` reads a message the same whatever wraps or prefixes it.

Takes every message of the training corpus (tests/fixtures/real_messages/, error and harmless
families alike; never a held-out folder), applies each transform below, and prints per transform
the share of messages whose explanations are unchanged: the same explanation ids, the same first
cause of each, the same harmless verdict; and how many of ordinary.yaml's lines (none reported
untransformed) the transform makes reported as something to act on. Only messages that are explained at all untransformed
are counted (a transform cannot keep what was never read). The transforms are what the programs
between a message and a user do to it, deterministic (seeded):

  hard-N      a terminal N columns wide: every line cut at exactly N characters (mid-word)
  word-N      a forum or e-mail word-wrapping at N columns (at blanks; a long word stays whole),
              ``word-N-indent`` with two blanks before each continuation
  prefix-X    every line carrying wrapper X's prefix (docker compose, kubectl --prefix, GitHub
              Actions, journald, Jupyter server, mpirun --tag-output, torchrun, Ray, SLURM, the
              container runtime's log file, Airflow)
  crlf        Windows line ends
  colour      each line in colour escapes
  quote       a Markdown quote
  repr        the output's Python repr inside a list (``['...\\n...']``)
  json        a JSON log record whose ``message`` holds the text

    python benchmarks/explain_transforms.py            # the table
    python benchmarks/explain_transforms.py --show 3   # and the first 3 changed messages of each
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "fixtures" / "real_messages"

# A wrapper's prefix for the line at an index (some carry a time that moves on, a pid, a rank).
PREFIXES: dict[str, Callable[[int], str]] = {
    "compose": lambda i: "trainer-1  | ",
    "kubectl": lambda i: "[pod/trainer-7f9c4-x2kq/tensorflow] ",
    "actions": lambda i: f"2024-05-01T10:00:{i % 60:02d}.{1234567 + i * 31:07d}Z ",
    "journald": lambda i: f"May 01 10:00:{i % 60:02d} gpu-node-3 python3[12345]: ",
    "jupyter": lambda i: f"[I 2024-05-01 10:00:{i % 60:02d}.{i * 7 % 1000:03d} ServerApp] ",
    "mpirun": lambda i: "[1,0]<stderr>:",
    "torchrun": lambda i: "[rank0]: ",
    "ray": lambda i: "(pid=4321) ",
    "ray-actor": lambda i: "(RayTrainWorker pid=4321, ip=10.0.0.12) ",
    "srun": lambda i: "0: ",
    "cri": lambda i: f"2024-05-01T10:00:{i % 60:02d}.{123456789 + i:09d}Z stderr F ",
    "airflow": lambda i: f"[2024-05-01, 10:00:{i % 60:02d} UTC] {{subprocess.py:93}} INFO - ",
}


def hard_wrap(text: str, width: int) -> str:
    out = []
    for line in text.split("\n"):
        out.extend([line[i : i + width] for i in range(0, len(line), width)] or [""])
    return "\n".join(out)


def word_wrap(text: str, width: int, indent: str = "") -> str:
    out = []
    for line in text.split("\n"):
        wrapped = textwrap.wrap(
            line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False, drop_whitespace=True
        )
        out.extend(wrapped or [""])
    return "\n".join(out)


def prefixed(text: str, name: str) -> str:
    prefix = PREFIXES[name]
    return "\n".join(prefix(i) + line for i, line in enumerate(text.split("\n")))


def transforms() -> dict[str, Callable[[str], str]]:
    found: dict[str, Callable[[str], str]] = {}
    for width in (40, 60, 80, 120):
        found[f"hard-{width}"] = lambda t, w=width: hard_wrap(t, w)
    for width in (72, 100):
        found[f"word-{width}"] = lambda t, w=width: word_wrap(t, w)
        found[f"word-{width}-indent"] = lambda t, w=width: word_wrap(t, w, "  ")
    for name in PREFIXES:
        found[f"prefix-{name}"] = lambda t, n=name: prefixed(t, n)
    found["crlf"] = lambda t: t.replace("\n", "\r\n")
    found["colour"] = lambda t: "\n".join(f"\x1b[31m{line}\x1b[0m" if line else line for line in t.split("\n"))
    found["quote"] = lambda t: "\n".join("> " + line for line in t.split("\n"))
    found["repr"] = lambda t: repr([t if t.endswith("\n") else t + "\n"])
    found["json"] = lambda t: json.dumps({"time": "2024-05-01T10:00:00Z", "level": "error", "message": t})
    found["compose+hard-80"] = lambda t: hard_wrap(prefixed(t, "compose"), 80)
    return found


def messages() -> list[dict]:
    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        if path.name != "ordinary.yaml":
            out.extend(yaml.safe_load(path.read_text(encoding="utf-8"))["messages"])
    return out


def ordinary_lines() -> list[str]:
    return [item["line"] for item in yaml.safe_load((CORPUS / "ordinary.yaml").read_text(encoding="utf-8"))["lines"]]


def acted_on(catalogue, text: str) -> bool:
    """Whether an ordinary line is reported as something to act on."""
    from envcheck.explain import explain  # the catalogue is loaded first, in main

    return any(not e.harmless for e in explain(catalogue.scan_text(text)))


def verdict(catalogue, text: str) -> tuple:
    """What a user relies on: each explanation's id, its first cause, whether it is harmless."""
    from envcheck.explain import explain  # the catalogue is loaded first, in main

    return tuple(
        sorted((e.id, e.causes[0].id if e.causes else "", e.harmless) for e in explain(catalogue.scan_text(text)))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", type=int, default=0, help="print the first N changed messages of each transform")
    parser.add_argument("--only", default="", help="run only the transforms whose name holds this")
    parser.add_argument("--seed", type=int, default=12, help="seed of the sample (--sample)")
    parser.add_argument("--sample", type=int, default=0, help="read only N messages, drawn with --seed")
    args = parser.parse_args()

    from envcheck.explain import load_patterns

    catalogue = load_patterns()
    entries = messages()
    if args.sample:
        entries = random.Random(args.seed).sample(entries, min(args.sample, len(entries)))
    plain = [(e["id"], e["message"], verdict(catalogue, e["message"])) for e in entries]
    plain = [(i, m, v) for i, m, v in plain if v]
    ordinary = [line for line in ordinary_lines() if not acted_on(catalogue, line)]
    if args.sample:
        ordinary = random.Random(args.seed).sample(ordinary, min(args.sample, len(ordinary)))
    print(f"{len(plain)} corpus messages explained untransformed (of {len(entries)}); {len(ordinary)} ordinary lines")
    print(f"{'transform':<22} {'unchanged':>9} {'share':>7} {'ordinary acted on':>18}")
    shares = []
    for name, transform in transforms().items():
        if args.only and args.only not in name:
            continue
        changed = [(i, transform(m), v) for i, m, v in plain]
        lost = [(i, t, v, verdict(catalogue, t)) for i, t, v in changed]
        lost = [row for row in lost if row[2] != row[3]]
        share = 1 - len(lost) / len(plain)
        shares.append(share)
        acted = sum(acted_on(catalogue, transform(line)) for line in ordinary)
        print(f"{name:<22} {len(plain) - len(lost):>9} {share:>7.1%} {acted:>18}")
        for message_id, text, wanted, got in lost[: args.show]:
            print(f"    {message_id}: wanted {wanted}\n      got {got}\n      {text[:300]!r}")
    if shares:
        print(f"{'mean':<22} {'':>9} {sum(shares) / len(shares):>7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
