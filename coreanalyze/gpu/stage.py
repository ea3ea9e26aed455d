"""The analysis stage of a GPU exception: find the GPU core of a CPU core, read it, and give the
report its verdict; and the report of a GPU core analyzed on its own."""

from __future__ import annotations

import os

from coreanalyze import __version__
from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import CoreInfo, Report
from coreanalyze.base.vocabulary import FaultKind
from coreanalyze.gpu.coredump import read_gpu_core
from coreanalyze.gpu.locate import ENABLE_VARIABLE, locate_gpu_core
from coreanalyze.gpu.rules import gpu_rules
from coreanalyze.gpu.verdict import apply_gpu_core, apply_missing_gpu_core


def add_gpu_exception(report: Report, environ: dict[str, str] | None, core_path: str, gpu_core: str | None = None, rules=None) -> None:
    """gpu_core: the GPU core the user named (--gpu-core); else it is looked for beside the core.
    A GPU core the user named must be readable (BadInput); one found beside the core that is
    not is a warning."""
    if gpu_core is None and not _used_the_gpu(report, environ):
        return  # no driver in the process: no GPU core to look for
    lookup = locate_gpu_core(core_path, report.core.pid if report.core else None, environ)
    path = gpu_core or lookup.found
    if path is None:
        if report.classification.fault_kind != FaultKind.HANG:
            apply_missing_gpu_core(report, lookup, rules=rules)
        return
    try:
        dump = read_gpu_core(path)
    except BadInput as e:
        if gpu_core:
            raise
        report.warnings.append(f"the GPU core beside the core could not be read: {e}")
        apply_missing_gpu_core(report, lookup, unreadable=str(e), rules=rules)
        return
    report.warnings.extend(f"GPU core: {line}" for line in dump.warnings)
    apply_gpu_core(report, dump, rules)


def name_as_given(report: Report, copy: str, given: str) -> None:
    """A core analyzed from a decompressed copy: the report names the file given, also as the
    GPU core when the copy was one."""
    if report.core is not None:
        report.core.path = given
    gpu = report.classification.gpu
    if gpu is not None and gpu.gpu_core == copy:
        gpu.gpu_core = given


def _used_the_gpu(report: Report, environ: dict[str, str] | None) -> bool:
    driver = gpu_rules().driver_modules
    return bool(environ and environ.get(ENABLE_VARIABLE)) or any(driver.search(m.path) for m in report.modules)


def gpu_core_report(path: str) -> tuple[Report, str | None]:
    """The report of a GPU core alone: what the GPU did (no host side), and why it is partial
    (a truncated file) or None. BadInput when the file cannot be read as a GPU core."""
    dump = read_gpu_core(path)
    report = Report(core=CoreInfo(path=path, arch="cuda", size=os.path.getsize(path)), tool_version=__version__)
    report.warnings.extend(dump.warnings)
    apply_gpu_core(report, dump)
    if dump.first is None:
        report.classification.summary = "The GPU core records no exception: it was written on request, not after a fault."
    return report, ("the GPU core is truncated; this report holds what its remaining part says" if dump.truncated else None)
