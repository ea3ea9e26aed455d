"""Which frameworks and GPU runtimes the process had loaded: the [[framework]] tables of the
rules, matched against the distributions it imported (environment.packages), the libraries
it mapped, and - for a pasted backtrace, which has neither - the frames of its threads.
Advice that names one framework's tools is given only to a process that loaded it."""

from __future__ import annotations

from typing import Iterator

from coreanalyze.base.model import Report
from coreanalyze.classify.names import normalize_function
from coreanalyze.classify.rules import Framework, RuleSet

# Frames per thread looked at for a report without modules or packages (a pasted text).
MAX_FRAMES = 128


def _package_names(report: Report) -> list[str]:
    packages = report.environment.get("packages") if isinstance(report.environment, dict) else None
    names = []
    for package in packages if isinstance(packages, list) else []:
        if isinstance(package, dict):
            names += [str(package[k]) for k in ("name", "module") if package.get(k)]
    return names


def _frames(report: Report) -> Iterator[tuple[str, str]]:
    """(normalized native function, Python file) of every thread's innermost frames."""
    for thread in report.threads:
        for frame in thread.frames[:MAX_FRAMES]:
            if frame.kind == "python":
                yield "", frame.file or ""
            else:
                yield normalize_function(frame.function or frame.raw_function or ""), ""


def _loaded(framework: Framework, packages: list[str], modules: list[str], frames: list[tuple[str, str]]) -> bool:
    if framework.package is not None and any(framework.package.search(p) for p in packages):
        return True
    if framework.module is not None and any(framework.module.search(m) for m in modules):
        return True
    if framework.function is not None and any(f and framework.function.search(f) for f, _ in frames):
        return True
    return framework.python_file is not None and any(p and framework.python_file.search(p) for _, p in frames)


def loaded_frameworks(report: Report, rules: RuleSet) -> frozenset[str]:
    packages = _package_names(report)
    modules = [m.path for m in report.modules]
    frames: list[tuple[str, str]] = []
    if not modules:
        # A core's file table names every library it mapped; a pasted trace has only its frames.
        modules = [f.module for t in report.threads for f in t.frames[:MAX_FRAMES] if f.module]
        frames = list(_frames(report))
    return frozenset(f.name for f in rules.frameworks if _loaded(f, packages, modules, frames))
