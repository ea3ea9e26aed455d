"""Where the GPU core dump of a CPU core is: beside the CPU core, under the name the CUDA driver
gave it.

The driver names the file after CUDA_COREDUMP_FILE from the process's environment (%p the pid,
%h the host name, %t the time in seconds, %% a percent sign), by default
core_<time>_<host>_<pid>.nvcudmp in the working directory. The environment comes from the core
and is untrusted: only the pattern's base name is used, cleaned, and only to match files in the
CPU core's own directory; the driver's full path is shown to the user, never opened.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from dataclasses import dataclass

from coreanalyze.gpu.coredump import is_gpu_core

PATTERN_VARIABLE = "CUDA_COREDUMP_FILE"
ENABLE_VARIABLE = "CUDA_ENABLE_COREDUMP_ON_EXCEPTION"
DEFAULT_PATTERN = "core_%t_%h_%p.nvcudmp"
MAX_DIRECTORY_ENTRIES = 100_000
MAX_NAME_CHARS = 255
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f/\\]")
_SPECIFIER = re.compile(r"%(.)")
_SPECIFIER_NAMES = {"p": "pid", "h": "host", "t": "time"}


@dataclass(frozen=True)
class GpuCoreLookup:
    found: str | None  # the GPU core beside the CPU core
    expected: str  # where the driver was to write it (its own path, with what is known filled in)
    enabled: bool  # the environment asked the driver for a GPU core on an exception
    pattern: str | None  # CUDA_COREDUMP_FILE as the core's environment holds it


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _expand(pattern: str, pid: int | None, host: str | None, *, as_glob: bool) -> str:
    """The pattern with its specifiers filled; an unknown value is '*' in a glob, <name> else."""
    values = {"p": str(pid) if pid is not None else None, "h": host, "%": "%"}
    quote = glob.escape if as_glob else str
    out: list[str] = []
    position = 0
    for match in _SPECIFIER.finditer(pattern):
        out.append(quote(pattern[position : match.start()]))
        value = values.get(match.group(1))
        if value is None:
            out.append("*" if as_glob else f"<{_SPECIFIER_NAMES.get(match.group(1), match.group(1))}>")
        else:
            out.append(quote(value))
        position = match.end()
    out.append(quote(pattern[position:]))
    return "".join(out)


def _safe_base(name: str) -> str | None:
    base = _UNSAFE.sub("", os.path.basename(name.strip()))[:MAX_NAME_CHARS]
    return base if base not in ("", ".", "..") else None


def _matches(directory: str, globs: list[str]) -> str | None:
    """The newest GPU core in directory whose name matches the first glob that matches any."""
    try:
        with os.scandir(directory) as entries:
            names = []
            for i, entry in enumerate(entries):
                if i >= MAX_DIRECTORY_ENTRIES:
                    break
                names.append(entry.name)
    except OSError:
        return None
    for pattern in globs:
        hits = []
        for name in names:
            if fnmatch.fnmatchcase(name, pattern):
                path = os.path.join(directory, name)
                if os.path.isfile(path) and is_gpu_core(path):
                    hits.append(path)
        if hits:
            return max(hits, key=lambda p: (os.path.getmtime(p), p))
    return None


def locate_gpu_core(core_path: str, pid: int | None, environ: dict[str, str] | None) -> GpuCoreLookup:
    environ = environ or {}
    directory = os.path.dirname(os.path.abspath(core_path))
    host = environ.get("HOSTNAME") or None
    pattern = environ.get(PATTERN_VARIABLE) or None
    globs: list[str] = []
    for candidate in (pattern, DEFAULT_PATTERN):
        base = _safe_base(candidate) if candidate else None
        if base:
            globs.append(_expand(base, pid, host, as_glob=True))
            if host is not None and "%h" in base:
                # HOSTNAME in a container's environment may not be the name the driver saw.
                globs.append(_expand(base, pid, None, as_glob=True))
    expected = _expand(pattern or DEFAULT_PATTERN, pid, host, as_glob=False)
    return GpuCoreLookup(
        found=_matches(directory, globs),
        expected=expected,
        enabled=_truthy(environ.get(ENABLE_VARIABLE)),
        pattern=pattern,
    )
