"""The facts of one report that the known-crash database and a fleet's view match on: the
versions it ran (Python, TensorFlow, TFLite, CUDA, the GPU driver, every package), the crashing
thread's functions and the texts. Small and bounded: a batch's record of them stays a few KiB
whatever the core's size (coreanalyze/batch/facts.py keeps them in the record).
"""

from __future__ import annotations

import os
import re
from typing import Any

from coreanalyze.base.model import FrameKind, Report
from coreanalyze.known import CrashFacts, normalize_package

MAX_FRAMES = 64
MAX_PACKAGES = 1000
MAX_CHARS = 300

# Packages that are "TFLite" to a person, whatever wheel brought the interpreter.
TFLITE_PACKAGES = ("tflite-runtime", "ai-edge-litert", "ai-edge-litert-nightly", "tflite-runtime-nightly")
CUDA_RUNTIME_PACKAGES = re.compile(r"^nvidia-cuda-runtime-cu\d+$")
# libcuda.so.<driver version> as the driver installs it (libcuda.so.1 is only the soname).
DRIVER_LIBRARY = re.compile(r"^libcuda\.so\.(\d{3,}\.\d+(?:\.\d+)?)$")
CUDART_LIBRARY = re.compile(r"^libcudart\.so\.(\d+(?:\.\d+)*)$")
# Toolkit libraries whose soname major is CUDA's major (libnvrtc.so.13 is CUDA 13; cuFFT, cuRAND,
# cuSOLVER, cuSPARSE, cuDNN and NCCL number their sonames their own way).
TOOLKIT_LIBRARY = re.compile(r"^lib(?:cublas|cublasLt|nvrtc|nvJitLink)\.so\.(\d+)(?:\.[\d.]+)?$")

# A host name as resolvers accept it (letters, digits, '-', '.', '_'): anything else is not a name.
HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")

# The fixed dimensions of a fleet's breakdown, in the order people read them.
VERSION_DIMENSIONS = ("tensorflow", "tflite", "python", "cuda", "driver", "gpu")


def clip(text: Any) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    return text.strip()[:MAX_CHARS]


def packages_of(report: Report) -> dict[str, str]:
    found: dict[str, str] = {}
    for p in (report.environment.get("packages") or [])[:MAX_PACKAGES]:
        name, version = clip(p.get("name")), clip(p.get("version"))
        if name and version:
            found[normalize_package(name)] = version
    return dict(sorted(found.items()))


def versions_of(report: Report, packages: dict[str, str]) -> dict[str, str]:
    env = report.environment
    versions = {"python": clip(env.get("python_version")), "tensorflow": clip(env.get("tensorflow_version"))}
    versions["tflite"] = next((packages[p] for p in TFLITE_PACKAGES if p in packages), None)
    toolkit = None
    for lib in env.get("cuda_libraries") or []:
        name = str(lib.get("path") or lib.get("library") or "").rsplit("/", 1)[-1]
        driver, runtime, other = DRIVER_LIBRARY.match(name), CUDART_LIBRARY.match(name), TOOLKIT_LIBRARY.match(name)
        if driver:
            versions["driver"] = driver.group(1)
        elif runtime:
            versions["cuda"] = runtime.group(1)
        elif other and toolkit is None:
            toolkit = other.group(1)
    if "cuda" not in versions and toolkit:
        versions["cuda"] = toolkit
    if "driver" not in versions:
        versions["driver"] = _driver_from_frames(report)
    for name, version in packages.items():
        if CUDA_RUNTIME_PACKAGES.match(name):
            versions["cuda"] = version  # the wheel's full version beats the soname's major
    gpu = report.classification.gpu
    if gpu is not None:
        versions["gpu"] = clip(gpu.device_name)
    return {k: v for k, v in versions.items() if v}


def _driver_from_frames(report: Report) -> str | None:
    """The driver's version from a frame in libcuda.so.<version>, when the module list lacks it
    (a core whose vendor segments were left out still names the file its frames ran in)."""
    for thread in report.threads:
        for frame in thread.frames[:MAX_FRAMES]:
            match = DRIVER_LIBRARY.match(os.path.basename(frame.module or ""))
            if match:
                return match.group(1)
    return None


# TensorFlow's generated Python wrapper of an op (tensorflow/python/ops/gen_array_ops.py's
# dynamic_stitch, or its dynamic_stitch_eager_fallback): the op it runs, by the op's snake_case name.
OP_WRAPPER_FILE = re.compile(r"(^|/)gen_\w+\.py$")
OP_WRAPPER_SUFFIX = re.compile(r"_eager_fallback$")
MAX_OPS = 8


def _crashing_thread(report: Report):
    for thread in report.threads:
        if thread.crashed or thread.tid == report.crashing_thread:
            return thread
    return None


def crashing_frames(report: Report) -> list[str]:
    thread = _crashing_thread(report)
    return [f.function[:MAX_CHARS] for f in thread.frames[:MAX_FRAMES] if f.function] if thread else []


def op_wrappers(report: Report) -> list[str]:
    """The ops the crashing thread's Python called through TensorFlow's generated wrappers,
    innermost first (`dynamic_stitch`): the op of a crash that came before its kernel ran (in
    the eager runtime's kernel lookup), or in a kernel class that serves many ops."""
    thread = _crashing_thread(report)
    found: list[str] = []
    for f in thread.frames[:MAX_FRAMES] if thread else ():
        if f.kind == FrameKind.PYTHON and f.function and OP_WRAPPER_FILE.search(f.file or ""):
            name = OP_WRAPPER_SUFFIX.sub("", f.function[:MAX_CHARS])
            if name not in found:
                found.append(name)
    return found[:MAX_OPS]


def kept_facts(report: Report) -> dict[str, Any]:
    """What a batch's record keeps of a report beside its verdict (batch/facts.py), and what
    report_facts reads the same way: one derivation for both."""
    cls = report.classification
    packages = packages_of(report)
    return {
        "packages": packages,
        "versions": versions_of(report, packages),
        "frames": crashing_frames(report),
        "ops": op_wrappers(report),
        "abort_message": clip(cls.abort_message),
        "gpu_exception": clip(cls.gpu.exception) if cls.gpu is not None else None,
    }


def report_facts(report: Report) -> CrashFacts:
    """The known-crash database's view of one report (`coreanalyze CORE`, `triage`, a batch's core)."""
    cls = report.classification
    return facts_of(signature=clip(cls.signature), summary=clip(cls.summary), fault_kind=cls.fault_kind, **kept_facts(report))


def facts_of(*, signature, summary, fault_kind, packages, versions, frames, abort_message, gpu_exception, ops=()) -> CrashFacts:
    versions = {**packages, **{k: v for k, v in versions.items() if k in ("python", "tensorflow", "tflite")}}
    return CrashFacts(
        signature=signature,
        abort_message=abort_message,
        summary=summary,
        gpu_exception=gpu_exception,
        fault_kind=fault_kind,
        frames=tuple(frames),
        op_wrappers=tuple(ops),
        versions=versions,
    )
