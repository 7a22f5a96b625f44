"""The architecture holds: each part of envcheck imports only the parts below it (DESIGN.md's
layers, from the facts up to the CLI), and no module imports one that imports it back, lazily or
not. A new module must be given a layer here, which is where its place gets decided.

Imports under ``if TYPE_CHECKING:`` are annotations only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "envcheck"

# Lowest first. A module may import from its own layer and the layers below, never above.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "envcheck",
        "errors",
        "fsutil",
        "resources",
        "shell",
        "cuda_devices",
        "procs",
        "invocation",
        "tfquiet",
        "words",
        "interrupts",
        "filename_fields",
        "scaling_baseline",
        "platform",
        "printable",
    ),
    ("facts",),
    ("findings", "matrix", "redact"),
    ("machine", "probes"),
    ("planner",),
    ("rules",),
    ("verdict",),
    ("runtime", "explain", "render", "compare", "scan"),
    ("train",),
    ("validation",),
    ("commands",),
    ("cli",),
    ("__main__",),  # entry points: envcheck/__main__.py and the packages' __main__.py
)


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("envcheck", *path.relative_to(PACKAGE).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def part(module: str) -> str:
    """The layer name of a module: its top-level part of envcheck, or __main__ for an entry point."""
    if module.endswith("__main__"):
        return "__main__"
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "envcheck"


def layer_of(module: str) -> int:
    for number, names in enumerate(LAYERS):
        if part(module) in names:
            return number
    raise AssertionError(f"{module} has no layer: add {part(module)!r} to LAYERS in {Path(__file__).name}")


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    def resolve(name: str) -> str:
        while name not in known:
            name = name.rsplit(".", 1)[0]
        return name

    graph = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for stmt in node.body
            for n in ast.walk(stmt)
        }
        targets = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "envcheck":
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in known else resolve(node.module))
            elif isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.split(".")[0] == "envcheck"}
        targets.discard(module)
        graph[module] = targets
    return graph


def test_every_module_imports_only_its_own_layer_and_below():
    graph = imports(modules())
    upward = sorted(
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert not upward, "\n".join(upward)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(imports(modules())) == []


def test_the_checks_catch_what_they_are_for():
    # An upward import and a cycle, in a made-up graph, are both found.
    graph = {"envcheck.facts": {"envcheck.rules.gpu"}, "envcheck.rules.gpu": {"envcheck.facts"}, "envcheck.cli": set()}
    assert cycles(graph) == [["envcheck.facts", "envcheck.rules.gpu"]]
    assert layer_of("envcheck.rules.gpu") > layer_of("envcheck.facts")
    assert layer_of("envcheck.train.__main__") == len(LAYERS) - 1
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
