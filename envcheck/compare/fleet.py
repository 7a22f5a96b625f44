"""Many snapshots (one per node of a cluster) grouped by verdict and by the facts that matter, and
the odd ones out named.

Each file is read as the doctor reads ``--facts`` (a snapshot or a whole ``doctor --json``
report) and judged by the doctor's rules, so a node's verdict here is the one ``envcheck doctor
--facts node.json`` gives. A file that cannot be read is refused with one line and the others are
kept. Nodes of a cluster are mostly alike, so a machine is judged once for all the nodes whose
snapshots differ only in what no rule reads (when it was taken, probe times, the host name, GPU
UUIDs and serial numbers that no variable names): a thousand snapshots take seconds.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envcheck.compare.facets import FACETS, Value, facet_values, text_of
from envcheck.errors import EnvcheckError, FactsError
from envcheck.facts import (
    DriverFacts,
    EnvFacts,
    Facts,
    LibrariesFacts,
    NvmlFacts,
    NvmlGpu,
    PackagesFacts,
    PciFacts,
    PlacementResult,
    PlatformFacts,
    PythonFacts,
    TensorflowFacts,
    from_dict,
    load_facts,
    to_dict,
)
from envcheck.findings import Severity
from envcheck.fsutil import read_user_text
from envcheck.machine import Machine
from envcheck.redact import redactor

VERDICT = "verdict"


@dataclass(frozen=True)
class Node:
    name: str  # the host name in the snapshot, else the file's name
    source: str  # the file
    status: str
    line: str  # the verdict, as the doctor prints it after "Verdict:"
    first_broken_link: str | None
    finding_id: str | None
    exit_code: int  # what `envcheck doctor --facts FILE` exits with
    errors: tuple[str, ...]  # ids of its error findings
    facets: dict[str, Value]
    redacted: dict[str, str]  # the verdict line and each facet's text, redacted (for --markdown)

    def value_text(self, facet: str) -> str:
        return self.line if facet == VERDICT else text_of(self.facets[facet])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.source,
            "verdict": {
                "status": self.status,
                "line": self.line,
                "first_broken_link": self.first_broken_link,
                "finding_id": self.finding_id,
            },
            "exit_code": self.exit_code,
            "errors": list(self.errors),
            "facts": {name: text_of(value) for name, value in self.facets.items()},
        }


@dataclass(frozen=True)
class Refused:
    source: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"file": self.source, "reason": self.reason}


@dataclass(frozen=True)
class Group:
    """The nodes that share one value of a fact (or one verdict)."""

    value: str
    nodes: tuple[Node, ...]
    shown: str = ""  # the parts of the value that differ between the groups ("cudnn 8.0.5 (LD_LIBRARY_PATH)")
    alike: str = ""  # the parts every group shares, said once

    @property
    def names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def to_dict(self) -> dict[str, Any]:
        out = {"value": self.value, "count": len(self.nodes), "nodes": self.names}
        if self.shown:
            out.update(differs=self.shown, alike=self.alike)
        return out


@dataclass(frozen=True)
class OddFact:
    facet: str  # a facet name, or "verdict"
    value: str
    majority: str
    majority_count: int
    majority_node: str  # a node that holds the majority's value


@dataclass(frozen=True)
class Fleet:
    nodes: tuple[Node, ...]
    refused: tuple[Refused, ...]
    judged: int  # distinct machines judged (nodes alike in everything a rule reads share one)
    groups: dict[str, tuple[Group, ...]] = field(default_factory=dict)  # "verdict" and each facet, largest first
    odd: dict[str, tuple[OddFact, ...]] = field(default_factory=dict)  # node name -> how it differs

    @property
    def uniform(self) -> bool:
        return all(len(groups) <= 1 for groups in self.groups.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [n.to_dict() for n in self.nodes],
            "refused": [r.to_dict() for r in self.refused],
            "verdicts": [g.to_dict() | {"status": g.nodes[0].status} for g in self.groups.get(VERDICT, ())],
            "facts": {name: [g.to_dict() for g in groups] for name, groups in self.groups.items() if name != VERDICT},
            "odd_ones_out": [
                {
                    "node": name,
                    "differs_in": [
                        {"fact": o.facet, "value": o.value, "majority": o.majority, "majority_count": o.majority_count}
                        for o in odd
                    ],
                }
                for name, odd in self.odd.items()
            ],
            "uniform": self.uniform,
            "judged": self.judged,
        }


def expand_inputs(inputs: Iterable[str]) -> tuple[list[str], list[Refused]]:
    """Files to read: each file named, the *.json files of each folder named, and the matches of a
    pattern the shell left unexpanded (quoted, or on Windows)."""
    files: list[str] = []
    refused: list[Refused] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found = sorted(
                (str(p) for p in path.iterdir() if p.suffix.lower() == ".json" and p.is_file()), key=natural_key
            )
            if not found:
                refused.append(Refused(item, "a folder with no .json files in it"))
            files.extend(found)
        elif not path.exists() and any(ch in item for ch in "*?["):
            found = sorted(glob.glob(item), key=natural_key)
            if not found:
                refused.append(Refused(item, "no file matches this pattern"))
            files.extend(found)
        else:
            files.append(item)
    unique = list({_same_file(f): f for f in reversed(files)}.values())[::-1]  # one file named twice: once
    return unique, refused


def _same_file(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def read_fleet(inputs: Iterable[str], jobs: int = 1) -> Fleet:
    files, refused = expand_inputs(inputs)
    if jobs > 1 and len(files) >= 2 * _CHUNK:
        results = _read_parallel(files, jobs)
    else:
        results = _read_files(files)
    nodes: list[Node] = []
    judged = set()
    for outcome in results:
        if isinstance(outcome, Refused):
            refused.append(outcome)
        else:
            key, node = outcome
            judged.add(key)
            nodes.append(node)
    nodes = _unique_names(nodes)
    nodes.sort(key=lambda n: natural_key(n.name))
    return group(tuple(nodes), tuple(refused), len(judged))


_CHUNK = 64


def _read_parallel(files: list[str], jobs: int) -> list:
    """Files in chunks over worker processes, each with its own cache of judged machines."""
    # lazy for start-up: keeps concurrent.futures out of every import of compare.fleet
    from concurrent.futures import ProcessPoolExecutor

    chunks = [files[i : i + _CHUNK] for i in range(0, len(files), _CHUNK)]
    workers = workers_for(jobs, len(chunks))
    if workers < 2:
        return _read_files(files)
    try:
        # lazy and guarded: importing multiprocessing can fail on some systems, and the try handles it
        import multiprocessing

        context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return [outcome for chunk in pool.map(_read_files, chunks) for outcome in chunk]
    except (OSError, ImportError, RuntimeError):  # no processes to be had here: one at a time
        return _read_files(files)


def workers_for(jobs: int, chunks: int) -> int:
    """Worker processes for ``chunks`` of files: never more than the chunks, nor than the CPUs."""
    return max(1, min(jobs, chunks, os.cpu_count() or 1))


def _read_files(files: list[str]) -> list:
    cache: dict[str, tuple] = {}
    return [_read_one(path, cache) for path in files]


def _read_one(path: str, cache: dict[str, tuple]):
    """One file: a node, or the one line that refuses it. A snapshot whose machine was judged
    already (the same key) is only checked in the fields the key leaves out."""

    key = None
    try:
        data = json.loads(read_user_text(path, "a facts file", FactsError))
        if isinstance(data, dict) and "facts" in data and "schema_version" in data and "verdict" in data:
            data = data["facts"]  # a whole doctor --json report
        key, noise = machine_key(data)
        judged = cache.get(key)
        if judged is not None:
            _check_noise(noise)
            return key, _node(path, noise.get("hostname"), judged)
    except Exception:  # noqa: BLE001 - anything odd goes the strict way below, which names it
        pass
    try:
        facts = _load(path)
    except EnvcheckError as exc:
        return Refused(path, _without_path(str(exc), path))
    except RecursionError:
        return Refused(path, "JSON nested too deeply")
    if key is None:
        key = machine_key(to_dict(facts))[0]
    judged = cache.get(key)
    if judged is None:
        judged = cache[key] = _judge(facts)
    return key, _node(path, facts.platform.hostname, judged)


def _load(path: str) -> Facts:
    return load_facts(path)


def _node(path: str, hostname: str | None, judged: tuple) -> Node:
    return Node(hostname or Path(path).stem, path, *judged)


def _judge(facts: Facts) -> tuple:
    # lazy for start-up: keeps verdict out of every import of compare.fleet
    from envcheck.verdict import judge

    report = judge(facts)
    v = report.verdict
    values = facet_values(Machine(facts))
    redact = redactor(facts, hostname=False)
    redacted = {VERDICT: redact(v.line), **{name: redact(text_of(value)) for name, value in values.items()}}
    errors = tuple(f.id for f in report.findings if f.severity is Severity.ERROR)
    return v.status, v.line, v.first_broken_link, v.finding_id, report.exit_code, errors, values, redacted


def _without_path(message: str, path: str) -> str:
    return message[len(path) + 2 :] if message.startswith(path + ": ") else message


_SECTIONS = ("python", "platform", "env", "packages", "pci", "driver", "nvml", "libraries", "tensorflow")


def machine_key(data: dict) -> tuple[str, dict]:
    """(key, what it leaves out) for a snapshot as JSON data. Two snapshots with the same key get
    the same findings: the key leaves out only what no rule reads (when, how long, the host name,
    and GPU UUIDs and serial numbers unless a variable names a GPU by its UUID)."""
    data = dict(data)
    noise: dict[str, Any] = {
        "top": {k: data.pop(k) for k in ("created", "envcheck_version") if k in data},
        "seconds": {},
    }
    for name in _SECTIONS:
        if isinstance(data.get(name), dict) and "seconds" in data[name]:
            data[name] = dict(data[name])
            noise["seconds"][name] = data[name].pop("seconds")
    platform = data.get("platform")
    if isinstance(platform, dict) and "hostname" in platform:
        noise["hostname"] = platform.pop("hostname")
    tf = data.get("tensorflow")
    if isinstance(tf, dict):
        if "import_seconds" in tf:
            noise["import_seconds"] = tf.pop("import_seconds")
        if isinstance(tf.get("placement"), list):
            placement = [dict(p) if isinstance(p, dict) else p for p in tf["placement"]]
            noise["placement"] = [p.pop("seconds") for p in placement if isinstance(p, dict) and "seconds" in p]
            tf["placement"] = placement
    variables = (data.get("env") or {}).get("variables") if isinstance(data.get("env"), dict) else None
    names_uuid = isinstance(variables, dict) and any(
        isinstance(v, str) and ("GPU-" in v or "MIG-" in v) for v in variables.values()
    )
    nvml = data.get("nvml")
    if not names_uuid and isinstance(nvml, dict) and isinstance(nvml.get("gpus"), list):
        gpus = [dict(g) if isinstance(g, dict) else g for g in nvml["gpus"]]
        noise["gpus"] = [{k: g.pop(k) for k in ("uuid", "serial") if k in g} for g in gpus if isinstance(g, dict)]
        data["nvml"] = {**nvml, "gpus": gpus}
    return json.dumps(data, sort_keys=True, separators=(",", ":")), noise


def _check_noise(noise: dict) -> None:
    """The fields the key leaves out, checked by the snapshot reader itself (the same types, the
    same strictness): a snapshot that would be refused on its own is refused here too."""

    sections = {
        "python": PythonFacts,
        "platform": PlatformFacts,
        "env": EnvFacts,
        "packages": PackagesFacts,
        "pci": PciFacts,
        "driver": DriverFacts,
        "nvml": NvmlFacts,
        "libraries": LibrariesFacts,
        "tensorflow": TensorflowFacts,
    }
    from_dict(Facts, noise["top"])
    for name, seconds in noise["seconds"].items():
        from_dict(sections[name], {"seconds": seconds})
    if "hostname" in noise:
        from_dict(PlatformFacts, {"hostname": noise["hostname"]})
    if "import_seconds" in noise:
        from_dict(TensorflowFacts, {"import_seconds": noise["import_seconds"]})
    for seconds in noise.get("placement", ()):
        from_dict(PlacementResult, {"op": "", "requested": "", "seconds": seconds})
    for gpu in noise.get("gpus", ()):
        from_dict(NvmlGpu, {"index": 0, **gpu})


def _unique_names(nodes: list[Node]) -> list[Node]:
    """Two files of one host (a rerun, a copy) are told apart by their paths: each by as many of
    its last path parts as it takes ("n1 (a/node.json)", "n1 (b/node.json)")."""
    by_name: dict[str, list[Node]] = {}
    for n in nodes:
        by_name.setdefault(n.name, []).append(n)
    shown: dict[int, str] = {}
    for name, same in by_name.items():
        if len(same) > 1:
            for n, tail in zip(same, _distinct_tails([n.source for n in same])):
                shown[id(n)] = f"{name} ({tail})"
    return [Node(**{**n.__dict__, "name": shown[id(n)]}) if id(n) in shown else n for n in nodes]


def _distinct_tails(paths: list[str]) -> list[str]:
    parts = [Path(os.path.normpath(p)).parts for p in paths]
    for k in range(1, max(len(p) for p in parts) + 1):
        tails = ["/".join(p[-k:]) for p in parts]
        if len(set(tails)) == len(tails):
            return tails
    return [f"{os.path.normpath(p)} #{i}" for i, p in enumerate(paths, 1)]  # one file named twice


def group(nodes: tuple[Node, ...], refused: tuple[Refused, ...], judged: int) -> Fleet:
    groups: dict[str, tuple[Group, ...]] = {}
    for facet in (VERDICT, *(f.name for f in FACETS)):
        by_value: dict[str, list[Node]] = {}
        for node in nodes:
            by_value.setdefault(node.value_text(facet), []).append(node)
        ordered = sorted(by_value.items(), key=lambda kv: (-len(kv[1]), natural_key(kv[0])))
        groups[facet] = _split_common(facet, tuple(Group(value, tuple(members)) for value, members in ordered))
    return Fleet(nodes, refused, judged, groups, _odd_ones_out(groups))


def _split_common(facet: str, groups: tuple[Group, ...]) -> tuple[Group, ...]:
    """For a fact of many parts (eight libraries), each group shows the parts where the groups
    differ; the parts they share are said once."""
    if facet == VERDICT or len(groups) < 2:
        return groups
    values = [g.nodes[0].facets[facet] for g in groups]
    common = {k: v for k, v in values[0].items() if all(other.get(k) == v for other in values[1:])}
    if not common or all(set(v) <= set(common) for v in values):
        return groups
    alike = text_of(common)
    return tuple(
        dataclasses.replace(
            g, shown=text_of({k: v for k, v in value.items() if k not in common}) or "(none)", alike=alike
        )
        for g, value in zip(groups, values)
    )


def _odd_ones_out(groups: dict[str, tuple[Group, ...]]) -> dict[str, tuple[OddFact, ...]]:
    """A node is odd in a fact when most nodes share one value of it and the node has another.
    With no single largest group (half and half) nobody is named: either half could be right."""
    odd: dict[str, list[OddFact]] = {}
    for facet, members in groups.items():
        if len(members) < 2 or len(members[0].nodes) == len(members[1].nodes):
            continue
        majority = members[0]
        for other in members[1:]:
            for node in other.nodes:
                odd.setdefault(node.name, []).append(
                    OddFact(
                        facet,
                        _differing(facet, node, majority.nodes[0]),
                        _differing(facet, majority.nodes[0], node),
                        len(majority.nodes),
                        majority.nodes[0].name,
                    )
                )
    order = {n: i for i, n in enumerate(sorted(odd, key=natural_key))}
    return {name: tuple(odd[name]) for name in sorted(odd, key=order.get)}


def _differing(facet: str, node: Node, other: Node) -> str:
    """The parts of a fact's value where ``node`` differs from ``other``: the one cuDNN, not all
    eight libraries."""
    if facet == VERDICT:
        return node.line
    mine, theirs = node.facets[facet], other.facets[facet]
    parts = {k: v for k, v in mine.items() if theirs.get(k) != v}
    parts.update({k: "none" for k in theirs if k not in mine and k})
    return text_of(parts) if parts and len(parts) < len(mine) else text_of(mine)


_DIGITS = re.compile(r"([0-9]+)")


def natural_key(text: str) -> list:
    """ "node-2" before "node-10": each run of digits compared as a number, by its length without
    leading zeros and then its digits (never int(): a run of 5,000 digits is past its limit)."""
    key: list = []
    for i, part in enumerate(_DIGITS.split(text)):
        if i % 2:  # re.split puts the digit runs at the odd places
            number = part.lstrip("0") or "0"
            key.append((len(number), number, part))
        else:
            key.append(part.lower())
    return key


def _numbered(name: str) -> tuple[str, str] | None:
    """ "gpu-node-07" -> ("gpu-node-", "07"): the name's last run of ASCII digits, found from the
    end (linear; a regex with a lazy prefix is quadratic on a long name). A run longer than a
    node number can be (18 digits) keeps the name whole."""
    end = len(name)
    start = end
    while start > 0 and name[start - 1] in "0123456789":
        start -= 1
    if start == end or end - start > 18:
        return None
    return name[:start], name[start:]


def hostlist(names: Iterable[str]) -> str:
    """SLURM's compact form: gpu-node-01 ... gpu-node-38 -> "gpu-node-[01-38]"."""
    names = list(names)
    split = [_numbered(name) for name in names]
    padded = {(m[0], len(m[1])) for m in split if m and len(m[1]) > 1 and m[1].startswith("0")}
    runs: dict[tuple[str, int], list[int]] = {}
    order: list[object] = []
    for name, match in zip(names, split):
        if not match:
            order.append(name)
            continue
        prefix, digits = match
        key = (prefix, len(digits) if (prefix, len(digits)) in padded else 0)
        if key not in runs:
            runs[key] = []
            order.append(key)
        runs[key].append(int(digits))
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, width = item
        numbers = sorted(set(runs[item]))

        def fmt(x: int, width: int = width) -> str:
            return str(x).zfill(width)

        ranges = []
        start = prev = numbers[0]
        for n in [*numbers[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(fmt(start) if start == prev else f"{fmt(start)}-{fmt(prev)}")
            if n is not None:
                start = prev = n
        single = len(ranges) == 1 and "-" not in ranges[0]
        parts.append(f"{prefix}{ranges[0]}" if single else f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)
