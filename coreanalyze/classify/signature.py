"""A stable, human-readable key for grouping the same crash across cores and pasted backtraces.

    SIGSEGV | BadScaleOp::Compute | tensorflow::ThreadPoolDevice::Compute | ... #1a2b3c4d5e

It is built only from what every source agrees on: the signal name and the normalized names of
the first significant frames of the crashing thread (names as in names.normalize_function, with
glibc's aliases folded: __GI_raise -> raise, __memcpy_avx_unaligned_erms -> memcpy). Addresses,
offsets, paths, line numbers, template arguments, clone suffixes and inline namespaces never
enter it; a frame without a name contributes its library's basename. An unnamed frame of the
main program (a stripped interpreter, say) is left out: gdb prints no module for it, and the
program's name depends on how it was started (a venv's `bin/python` runs `python3.11`).

Stripped vendor libraries (libcuda, libcudnn, ROCm's) name only their exported functions: an
unnamed frame of one stands for the entry point it runs for (Frame.entry_point), and a run of
frames that tell nothing apart - unnamed frames under one entry point, or under none - is one
key, never `libcuda.so | libcuda.so | ...`. A crash in such a library's own thread, with no
entry point on its stack, is anchored on the GPU call where the user's thread stood
(`host cuCtxSynchronize_v2`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from coreanalyze.base.model import Frame
from coreanalyze.classify.culprit import CulpritPick, pick_culprit
from coreanalyze.classify.frames import FrameView, build_views, same_run
from coreanalyze.classify.names import normalize_function
from coreanalyze.classify.rules import NOISE_ROLES, RuleSet, default_rules

HASH_CHARS = 10
_SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")


def _frame_key(v: FrameView, rules: RuleSet) -> str:
    if v.python:
        file = v.file_base or "?"
        return f"{file}:{v.name or '?'}"
    if rules.settings.signature_templates and v.frame.function:
        name = rules.fold(normalize_function(v.frame.function, keep_templates=True))
    else:
        name = v.name or v.entry_point
    return name or _library_key(v.module_base) or "??"


def _library_key(base: str) -> str:
    # gdb names a library by its link-map path (libffi.so.8), the core's file table by the
    # file it resolves to (libffi.so.8.1.2): keep only what both agree on.
    return _SHARED_OBJECT.sub(".so", base)


def _anonymous_program_frame(v: FrameView) -> bool:
    return not v.python and not v.name and not _SHARED_OBJECT.search(v.module_base)


def signature_frames(views: Sequence[FrameView], pick: CulpritPick, rules: RuleSet) -> list[FrameView]:
    """The culprit and the significant frames under it, as many as the settings ask for."""
    n = rules.settings.signature_frames
    if pick.view is None:
        return []
    if pick.view.python:
        python = [v for v in views if v.python]
        start = python.index(pick.view)
        return python[start: start + n]
    # A checked accessor skipped for the culprit still tells two CHECKs in one kernel apart.
    chosen = [v for v in pick.skipped if v.role == "checked"][: n - 1] + [pick.view]
    for v in views[pick.view.position + 1:]:
        if len(chosen) >= n:
            break
        if v.python or v.role in NOISE_ROLES or _anonymous_program_frame(v) or same_run(chosen[-1], v):
            continue
        chosen.append(v)
    return chosen


def _bare_library(v: FrameView) -> bool:
    return not v.python and not v.anchor


_LOG_SITE = re.compile(r"([\w.+-]+\.(?:cc|cpp|c|h|hpp)):\d+\]\s*(.*)")
_CHECK_VALUES = re.compile(r"\s*\([^()]*\bvs\.[^()]*\)")  # "(1 vs. 0)": this run's values


def _message_key(abort_message: str | None) -> str | None:
    """A thin report's grouping key: the fatal log line's file and message, without values."""
    if not abort_message:
        return None
    line = " ".join(abort_message.split())
    site = _LOG_SITE.search(line)
    if site:
        line = f"{site.group(1)}: {site.group(2)}"
    line = _CHECK_VALUES.sub("", line)
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    return line[:160] or None


def make_signature(
    signal_name: str | None,
    views: Sequence[FrameView],
    pick: CulpritPick,
    rules: RuleSet,
    abort_message: str | None = None,
    host_api: str | None = None,
) -> str:
    """host_api: the GPU call another thread stood in, the anchor of a crash whose frames are
    unnamed library code only."""
    parts = [signal_name or "crash"]
    frames = signature_frames(views, pick, rules)
    if frames:
        parts.extend(_frame_key(v, rules) for v in frames)
        if host_api and all(_bare_library(v) for v in frames):
            parts.append(f"host {host_api}")
    else:
        parts.append(_message_key(abort_message) or "no frames")
    return hashed_signature(parts)


def hashed_signature(parts: Sequence[str]) -> str:
    """'SIGSEGV | f | g #1a2b3c4d5e': the parts, and a short hash of them to group by."""
    key = " | ".join(parts)
    digest = hashlib.sha1(key.encode("utf-8", "replace")).hexdigest()[:HASH_CHARS]
    return f"{key} #{digest}"


def signature_of(signal_name: str | None, frames: Sequence[Frame], rules: RuleSet | None = None) -> str:
    """Signature straight from a frame list (for callers that have no classification yet)."""
    rules = rules or default_rules()
    views = build_views(frames, [], rules)
    return make_signature(signal_name, views, pick_culprit(views, rules), rules)
