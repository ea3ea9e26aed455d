"""A new TensorFlow crash, ready to report upstream: the fields TensorFlow's issue template asks
for (.github/ISSUE_TEMPLATE/tensorflow_issue_template.yaml: issue type, TF nightly, source,
TensorFlow version, custom code, OS, mobile device, Python version, Bazel and compiler versions,
CUDA/cuDNN, GPU, current behaviour, standalone code to reproduce, relevant log output), filled
from the report. Only for a process that ran TensorFlow and whose crash is not a known one
(classification.known): a known crash has its upstream issue already.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

from coreanalyze.base.model import Report

MAX_FRAMES = 30
OS_RELEASE = "/etc/os-release"
TF_MARKERS = ("tensorflow", "libtensorflow", "_pywrap_tensorflow", "tflite")


@dataclass
class UpstreamIssue:
    fields: list[tuple[str, str]]  # (the template's label, the answer)
    behaviour: str
    reproducer: str | None  # Python code, when the op instance gave one
    reproducer_hint: str
    log: str  # abort message and the crashing thread's frames


def _ran_tensorflow(report: Report) -> bool:
    if report.environment.get("tensorflow_version"):
        return True
    thread = report.crashed_thread
    frames = thread.frames if thread else []
    return any(
        (f.function or "").startswith(("tensorflow::", "tsl::", "tflite::")) or any(m in (f.module or "") for m in TF_MARKERS)
        for f in frames[:MAX_FRAMES]
    )


def _source(report: Report) -> str:
    env = report.environment
    package = env.get("tensorflow_package")
    for p in env.get("packages") or []:
        if p.get("name") == package and p.get("path"):
            where = "site-packages" if "-packages" in str(p["path"]) else "an installed package"
            return f"binary (the {package} wheel, from {where})"
    return "binary (pip wheel)" if env.get("tensorflow_version") else "unknown (not read from the report)"


def _os_text(report: Report) -> str:
    arch = report.core.arch if report.core is not None and report.core.arch else platform.machine()
    text = f"Linux {arch}"
    local = report.modules and all((m.origin or {}).get("kind", "local") == "local" for m in report.modules if m.status == "ok")
    if local and report.source == "core":
        try:
            with open(OS_RELEASE, encoding="utf-8") as f:
                pretty = next((line.split("=", 1)[1].strip().strip('"') for line in f if line.startswith("PRETTY_NAME=")), None)
        except OSError:
            pretty = None
        if pretty:
            text += f", {pretty[:120]} (the machine where the core's libraries were found)"
    return text


def _custom_code(report: Report) -> str:
    cls = report.classification
    if cls.suspect is not None and cls.suspect.module:
        return f"Yes: the custom-op library {os.path.basename(cls.suspect.module)}"
    if report.launched_from is not None and report.launched_from.file:
        return f"Yes: called from {report.launched_from.file}:{report.launched_from.line}"
    return "Yes"


def _reproducer_hint(report: Report) -> str:
    cls = report.classification
    where = report.launched_from
    parts = []
    if cls.op_instance is not None and cls.op_instance.op:
        parts.append(f"the op {cls.op_instance.op} (node {cls.op_instance.node}) with the inputs in the report")
    if where is not None and where.file:
        parts.append(f"the call at {where.file}:{where.line} ({where.function})")
    if not parts:
        return "Reduce the program to the call that crashes; the frames below say where it was."
    return "Reduce the program to " + " from ".join(parts) + "."


def upstream_issue(report: Report) -> UpstreamIssue | None:
    cls = report.classification
    if cls.known is not None or not _ran_tensorflow(report):
        return None
    from coreanalyze.known.facts import packages_of, versions_of

    env = report.environment
    versions = versions_of(report, packages_of(report))
    tf = env.get("tensorflow_version") or "unknown (not read from the report)"
    if env.get("tensorflow_git_version"):
        tf += f" ({env['tensorflow_git_version']})"
    binary = "unknown" not in _source(report)
    cuda = versions.get("cuda")
    fields = [
        ("Issue Type", "Bug"),
        ("Have you reproduced the bug with TF nightly?", "No (not yet: try it with the tf-nightly package)"),
        ("Source", _source(report)),
        ("Tensorflow Version", tf),
        ("Custom Code", _custom_code(report)),
        ("OS Platform and Distribution", _os_text(report)),
        ("Mobile device", "N/A"),
        ("Python version", env.get("python_version") or versions.get("python") or "unknown"),
        ("Bazel version", "N/A (binary)" if binary else "unknown"),
        ("GCC/Compiler version", "N/A (binary)" if binary else "unknown"),
        ("CUDA/cuDNN version", f"CUDA {cuda}" + (f", driver {versions['driver']}" if versions.get("driver") else "") if cuda else "none loaded (CPU)"),
        ("GPU model and memory", versions.get("gpu") or "N/A"),
    ]
    thread = report.crashed_thread
    lines = []
    if cls.abort_message:
        lines += [cls.abort_message, ""]
    signal = report.core.signal if report.core is not None else None
    if signal is not None and signal.name:
        lines.append(f"{signal.name}{f' ({signal.code_name})' if signal.code_name else ''} in thread {report.crashing_thread}")
    for f in (thread.frames if thread else [])[:MAX_FRAMES]:
        where = f" at {f.file}:{f.line}" if f.file else ""
        module = f" ({os.path.basename(f.module)})" if f.module else ""
        lines.append(f"#{f.index:<3} {f.function or '??'}{module}{where}")
    reproducer = cls.op_instance.reproducer if cls.op_instance is not None else None
    return UpstreamIssue(fields=fields, behaviour=cls.summary or cls.fault_kind, reproducer=reproducer,
                         reproducer_hint=_reproducer_hint(report), log="\n".join(lines))  # fmt: skip
