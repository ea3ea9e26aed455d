"""What a batch keeps of one core's report for the fleet's view: the versions it ran (Python,
TensorFlow, TFLite, CUDA, the GPU driver, every package), the crashing thread's functions and
texts the known-crash database matches on. Small and bounded: a record stays a few KiB whatever
the core's size.
"""

from __future__ import annotations

import os
import re
from typing import Any

from coreanalyze.base.model import Report
from coreanalyze.batch.store import CoreRecord
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


def _clip(text: Any) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    return text.strip()[:MAX_CHARS]


def packages_of(report: Report) -> dict[str, str]:
    found: dict[str, str] = {}
    for p in (report.environment.get("packages") or [])[:MAX_PACKAGES]:
        name, version = _clip(p.get("name")), _clip(p.get("version"))
        if name and version:
            found[normalize_package(name)] = version
    return dict(sorted(found.items()))


def versions_of(report: Report, packages: dict[str, str]) -> dict[str, str]:
    env = report.environment
    versions = {"python": _clip(env.get("python_version")), "tensorflow": _clip(env.get("tensorflow_version"))}
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
        versions["gpu"] = _clip(gpu.device_name)
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


def crashing_frames(report: Report) -> list[str]:
    for thread in report.threads:
        if thread.crashed or thread.tid == report.crashing_thread:
            return [f.function[:MAX_CHARS] for f in thread.frames[:MAX_FRAMES] if f.function]
    return []


def fill_facts(record: CoreRecord, report: Report) -> None:
    cls = report.classification
    record.packages = packages_of(report)
    record.versions = versions_of(report, record.packages)
    record.frames = crashing_frames(report)
    record.abort_message = _clip(cls.abort_message)
    record.gpu_exception = _clip(cls.gpu.exception) if cls.gpu is not None else None


def hostname_from_core(core_path: str, report: Report) -> str | None:
    """The HOSTNAME the process had in its environment (containers set it: the pod's or the
    container's name), read again from the core's notes only when the report saw the variable,
    so that cores without it cost nothing more."""
    if "HOSTNAME" not in (report.environment.get("environment_variable_names") or []):
        return None
    from coreanalyze.corefile import read_core

    try:
        value = read_core(core_path).environ.get("HOSTNAME")
    except Exception:  # noqa: BLE001 - a core the analysis could read; a second look that fails costs only the name
        return None
    return _clip(value) if value and HOSTNAME.match(value) else None


def crash_facts(record: CoreRecord) -> CrashFacts:
    """The known-crash database's view of a record."""
    versions = {**record.packages, **{k: v for k, v in record.versions.items() if k in ("python", "tensorflow", "tflite")}}
    return CrashFacts(
        signature=record.signature,
        abort_message=record.abort_message,
        summary=record.summary,
        gpu_exception=record.gpu_exception,
        fault_kind=record.fault_kind,
        frames=tuple(record.frames),
        versions=versions,
    )


def report_facts(report: Report) -> CrashFacts:
    """The same view of one report, without a record (`coreanalyze CORE`, `triage`)."""
    record = CoreRecord(identity="", file_identity="", path="", status="ok")
    cls = report.classification
    record.signature, record.summary, record.fault_kind = _clip(cls.signature), _clip(cls.summary), cls.fault_kind
    fill_facts(record, report)
    return crash_facts(record)
