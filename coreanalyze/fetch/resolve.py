"""Which distributions, at which versions, may hold a site-packages library of the core.

Decided by evidence in the core, by the rules in distributions.toml:
- the import name's candidate distributions, accelerator builds filled in with the CUDA / ROCm
  major of the libraries the process loaded (`cupy` -> `cupy-cuda13x`), builds that a loaded
  library points at tried first (`libonnxruntime_providers_cuda.so` -> `onnxruntime-gpu`);
- a `.dist-info` of one of them named in the process's memory: that one first, at that version;
- the module's `__version__` for the others;
- a namespace folder (`nvidia/cu13/lib/libnvrtc.so.13`): the distribution named by the library
  and the CUDA major, its version from memory, else bounded by the library's own version
  (`13.*`); the newest such wheel is then settled by build-id.
Nothing here downloads; every candidate is used only when its files are the core's
(verify.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Any, Iterable

from coreanalyze.fetch.rules import fetch_rules
from coreanalyze.fetch.target import ProcessTarget
from coreanalyze.process.imported import InMemoryDistribution, normalize

_FIELD = re.compile(r"\{(\w+)\}")
_SO_VERSION = re.compile(r"\.so\.(\d+(?:\.\d+){0,3})$")
_CUDA_FOLDER = re.compile(r"^cu(\d+)$")


@dataclass(frozen=True)
class Candidate:
    distribution: str
    version: str  # exact ("14.2.0") or a prefix ("13.*") that pip resolves to the newest match
    evidence: str  # why this version: "dist-info in memory", "cupy.__version__", "libnvrtc.so.13"


@dataclass
class Resolution:
    candidates: list[Candidate] = field(default_factory=list)
    unknown: str | None = None  # why there is no candidate

    @property
    def key(self) -> tuple:
        return tuple((c.distribution, c.version) for c in self.candidates) or (self.unknown,)


def expand(template: str, values: dict[str, Any]) -> str | None:
    """The template with its fields filled; None when one of them is not known."""
    missing = [name for name in _FIELD.findall(template) if values.get(name) is None]
    return None if missing else _FIELD.sub(lambda m: str(values[m.group(1)]), template)


def _fields(target: ProcessTarget) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, (major, minor) in target.accelerators.items():
        values[name], values[f"{name}_minor"] = major, minor
    return values


def candidate_names(import_name: str, target: ProcessTarget, loaded: Iterable[str] = ()) -> list[str]:
    """The distributions that may install `import_name`, for this process, most likely first."""
    rules = fetch_rules()
    templates = rules.import_names.get(import_name, (import_name.replace("_", "-"),))
    values = _fields(target)
    names = list(dict.fromkeys(n for n in (expand(t, values) for t in templates) if n))
    basenames = [os.path.basename(p) for p in loaded]
    preferred = [d for pattern, dists in rules.prefer_when_loaded if any(fnmatch(b, pattern) for b in basenames) for d in dists]
    return sorted(names, key=lambda n: 0 if n in preferred else 1)


def _in_memory(names: list[str], memory: list[InMemoryDistribution], site: str | None) -> list[InMemoryDistribution]:
    wanted = {normalize(n): i for i, n in enumerate(names)}
    found = [d for d in memory if normalize(d.name) in wanted]
    here = [d for d in found if d.directory == site] or found
    return sorted(here, key=lambda d: wanted[normalize(d.name)])


def _with_memory(
    names: list[str], version: str | None, evidence: str, memory: list[InMemoryDistribution], site: str | None
) -> Resolution:
    """Candidates: the distributions the process's memory names first (with their versions),
    then the other names at `version`."""
    out: list[Candidate] = []
    remembered = _in_memory(names, memory, site)
    # A dist-info at the module's own version first: that is the one that ran.
    remembered.sort(key=lambda d: 0 if version is None or d.version == version else 1)
    for d in remembered:
        out.append(Candidate(_spelled(names, d.name), d.version, "dist-info in the process's memory"))
    if version is not None:
        out += [Candidate(n, version, evidence) for n in names]
    first: dict[tuple[str, str], Candidate] = {}
    for c in out:
        first.setdefault((normalize(c.distribution), c.version), c)  # in memory first: its evidence
    out = list(first.values())
    return Resolution(out) if out else Resolution(unknown="the process's version is unknown")


def _spelled(names: list[str], found: str) -> str:
    return next((n for n in names if normalize(n) == normalize(found)), found.replace("_", "-"))


def _package_for(member: str, packages: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None]:
    """The import name a member belongs to (the longest dotted module of the walk that holds
    it, for namespace packages such as google.protobuf and cuda.bindings) and its package."""
    folders = member.split("/")[:-1]
    top = folders[0].removesuffix(".libs") if folders else member.split(".", 1)[0]
    best: tuple[str, dict[str, Any] | None] = (top, None)
    for p in packages:
        module = p.get("module") or ""
        parts = module.split(".")
        if parts[0] == top and folders[: len(parts)] == parts and len(module) >= len(best[0]):
            best = (module, p)
        elif best[1] is None and normalize(p.get("name", "")) == normalize(top):
            best = (top, p)
    return best


def resolve_package(
    member: str, packages: list[dict[str, Any]], memory: list[InMemoryDistribution], target: ProcessTarget,
    loaded: Iterable[str] = (), site: str | None = None,
) -> Resolution:  # fmt: skip
    """Candidates for a library of an ordinary package (`cupy/_core/core...so`, `numpy.libs/...`)."""
    import_name, package = _package_for(member, packages)
    rules = fetch_rules()
    if import_name not in rules.import_names and import_name.split(".", 1)[0] in rules.import_names:
        import_name = import_name.split(".", 1)[0]
    names = candidate_names(import_name, target, loaded)
    version, evidence = None, ""
    if package is not None:
        if package.get("version_from") == "dist-info" or normalize(package.get("name", "")) != normalize(import_name):
            names = [package["name"], *(n for n in names if normalize(n) != normalize(package["name"]))]
        version = package.get("version")
        evidence = f"{package.get('module') or import_name}.__version__" if package.get("version_from") == "__version__" else "dist-info"
    if version is None:
        # Another module of the same distributions knows it (cupy_backends from cupy).
        for p in packages:
            if p.get("version") and set(map(normalize, candidate_names(p.get("module") or "", target, loaded))) & set(map(normalize, names)):
                version, evidence = p["version"], f"{p.get('module')}.__version__"
                break
    return _with_memory(names, version, evidence, memory, site)


def resolve_namespace(
    member: str, memory: list[InMemoryDistribution], target: ProcessTarget, site: str | None = None
) -> Resolution | None:
    """Candidates for a library in a namespace folder (`nvidia/cu13/lib/libnvrtc.so.13`); None
    when the member is in no namespace of the rules."""
    parts = member.split("/")
    namespace = fetch_rules().namespaces.get(parts[0])
    if namespace is None or len(parts) < 3:
        return None
    library = parts[-1]
    stem = library.split(".so", 1)[0]
    folder = parts[1]
    cuda_folder = _CUDA_FOLDER.match(folder)
    component = namespace.components.get(stem) or (None if cuda_folder else folder.replace("_", "-"))
    if component is None:
        return Resolution(unknown=f"no distribution of the {parts[0]} namespace is known for {library}")
    values = {**_fields(target), "component": component}
    if cuda_folder:
        values["cuda"] = int(cuda_folder.group(1))
    names = list(dict.fromkeys(n for n in (expand(t, values) for t in namespace.distributions) if n))
    so_version = _SO_VERSION.search(library)
    bound = f"{so_version.group(1)}.*" if so_version else None
    return _with_memory(names, bound, library, memory, site)


def resolve(
    member: str, packages: list[dict[str, Any]], memory: list[InMemoryDistribution], target: ProcessTarget,
    loaded: Iterable[str] = (), site: str | None = None,
) -> Resolution:  # fmt: skip
    found = resolve_namespace(member, memory, target, site)
    return found if found is not None else resolve_package(member, packages, memory, target, loaded, site)
