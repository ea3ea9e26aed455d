"""No import cycles inside the package: every module's imports (also those inside functions)
form a graph without loops, so each stage can be read, tested and replaced on its own."""

from __future__ import annotations

import ast
from pathlib import Path

import coreanalyze

PACKAGE = Path(coreanalyze.__file__).resolve().parent
# Loaded into gdb by path, never imported as part of the package's graph.
OUTSIDE_THE_GRAPH = ("gdb_scripts",)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {
        module_name(p): p for p in PACKAGE.rglob("*.py") if not set(OUTSIDE_THE_GRAPH) & set(p.relative_to(PACKAGE).parts)
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    if submodule in modules:
                        edges.add(submodule)
                    elif target in modules:
                        edges.add(target)
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
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


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 80  # the whole package was read
    assert cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for child in graph.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def test_the_stages_name_no_debugger():
    """The stages call the Opener they are given (coreanalyze.unwind.debugger); gdb's plan and its
    opening of a core live in coreanalyze.gdb, which the stages do not import. The unwinding,
    the Python walk and the seam itself reach no part of gdb at all."""
    graph = import_graph()
    assert not {m for m in graph["coreanalyze.pipeline.stages"] if m == "coreanalyze.gdb" or m.startswith("coreanalyze.gdb.")}
    source = (PACKAGE / "pipeline" / "stages.py").read_text(encoding="utf-8")
    assert "gdb_pool" not in source and "GdbOpener" not in source
    for seam in ("coreanalyze.unwind.debugger", "coreanalyze.unwind.threads", "coreanalyze.pipeline.pystacks", "coreanalyze.python.pywalk", "coreanalyze.python.coretarget"):
        assert not {m for m in reachable(graph, seam) if m.startswith("coreanalyze.gdb")}, seam


def test_gdb_is_reached_only_through_its_opener():
    """Outside coreanalyze.gdb, the only module of it anything imports is the opener
    (coreanalyze.gdb.opening: opening a core, a batch's warm pool)."""
    graph = import_graph()
    reaching = {
        (module, target)
        for module, targets in graph.items()
        if module != "coreanalyze.gdb" and not module.startswith("coreanalyze.gdb.")
        for target in targets
        if (target == "coreanalyze.gdb" or target.startswith("coreanalyze.gdb.")) and target != "coreanalyze.gdb.opening"
    }
    assert not reaching


# The folders in the order of the pipeline: each may import only the folders before it (and
# itself), so a stage is found by its folder and nothing below a stage depends on what follows it.
# "coreanalyze" is the package's own __init__ (its version); the thin CLI sits above them all.
FOLDERS_IN_ORDER = (
    "coreanalyze",  # the version
    "base",  # infrastructure and the typed data model
    "rulesdata",  # the one loader of rules data
    "schema",  # the JSON contract
    "arch",  # what differs between CPU architectures
    "corefile",  # the core file: notes, memory segments, the module table
    "symbols",  # symbol and debug-file lookup
    "process",  # the crashed process: memory tiers, symbols, readers of its state
    "python",  # the CPython interpreter in the core
    "unwind",  # the unwinder seam
    "gdb",  # gdb as the unwinder
    "classify",  # the verdict of native frames
    "gpu",  # a GPU's own core dump
    "hang",  # a process that hung
    "opinstance",  # the op a kernel ran, from memory
    "jobs",  # one job's ranks
    "fetch",  # the crashed build's files from package indexes
    "image",  # container images as sysroots
    "pipeline",  # the stages of one core's analysis
    "known",  # the known-crash database
    "render",  # reports
    "shrink",  # small cores to attach to tickets
    "batch",  # many cores, the fleet's view
    "triage",  # crash text without a core
    "watch",  # the service that analyzes cores as they arrive
    "locate",  # where this system put its cores (core_pattern, systemd-coredump, apport)
    "capture",  # a crash caught as it happens: the watched process, its core and report
)
TOP_MODULES = {"coreanalyze.cli", "coreanalyze.__main__"}
# IPython's `%load_ext coreanalyze` looks for its hook on the package itself, whose one lazy import
# reaches the notebook extension of the last folder.
ENTRY_POINTS = {("coreanalyze", "coreanalyze.capture.notebook")}


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_module_sits_in_a_folder_of_the_pipeline():
    graph = import_graph()
    loose = sorted(m for m in graph if m not in TOP_MODULES and folder_of(m) not in FOLDERS_IN_ORDER)
    assert loose == [], "a module outside the pipeline's folders: give it one (FOLDERS_IN_ORDER)"


def test_no_folder_imports_one_that_follows_it():
    rank = {folder: i for i, folder in enumerate(FOLDERS_IN_ORDER)}
    upward = []
    for module, targets in import_graph().items():
        if module in TOP_MODULES:
            continue
        for target in targets:
            if (module, target) in ENTRY_POINTS:
                continue
            if target in TOP_MODULES or rank[folder_of(target)] > rank[folder_of(module)]:
                upward.append(f"{module} -> {target}")
    assert sorted(upward) == []
