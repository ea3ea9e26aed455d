"""The names of a crash read through TensorFlow's layout (layout.py): what the rules need not say.

A frame's function (its classes and namespaces), its source file and its library; the source
file of a fatal log line (`fusion_emitter.cc:6694] Check failed` is XLA, the TF 1.x full path
`tensorflow/contrib/.../kernels/x_op.cc` a kernel) and the file a bare CHECK names
(`bfc_allocator: Check failed`); op names in the text's lines (`tf.raw_ops.FakeParam`,
`tf.nn.depth_to_space`, `AvgPool3DGrad`, `InterleaveDatasetOp`). Each is a candidate for the
category with the same scoring as the rules (category.py): a priority less a penalty per frame
or line of distance from the crash. The rules' own, more specific patterns keep priorities above
these; the names decide where no rule said anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from coreanalyze.classify import layout
from coreanalyze.classify.frames import FrameView

# A frame whose function, source file or library the index places. Below the frame rules that
# name a subsystem's functions (55-97), above the generic ones (a library's name, CPython, 20-45).
FRAME_PRIORITY = 50
# The source file of the fatal line: where the log-source-* rules per directory were (the index
# made them redundant), below the ones kept for what a path alone cannot say (XLA's GPU compiler
# is XLA, a file named for CUDA is GPU code: 31-33). An op named on the line before scores as
# much; at no distance from the crash, the fatal line goes first.
MESSAGE_PRIORITY = 30
# An op named in the text's lines: what the user ran. As strong as a line rule of a subsystem.
LINE_OP_PRIORITY = 32
# A call the text names (`interpreter->invoke()`): weaker than an op's name.
LINE_CALL_PRIORITY = 28
# How many frames from the top are read (the window of the rules).
MAX_FRAMES = 12

_CHECK_STEM = re.compile(r"(?:^|\s)([a-z][a-z0-9_]{3,80}): Check failed")
# tf.raw_ops.X / tf.nn.x_y / tf.X: TensorFlow's Python API names an op: the ops its function
# applies (the index's `apis`: tf.reduce_mean runs Mean), else its name in CamelCase.
_TF_API = re.compile(r"\btf\.(?:compat\.v1\.)?(?:raw_ops\.(\w+)|((?:[a-z_]+\.)*([a-z][a-z0-9_]*)))")
# [Op:X] of an eager error, and CamelCase words with two humps at least (an op or its kernel class).
_OP_TAG = re.compile(r"\[Op:(\w+)\]")
# A call in the text (`interpreter->invoke()`, `Session::Run(`): the receiver names a source file.
_CALL = re.compile(r"\b([A-Za-z][A-Za-z0-9_]{3,40})(?:->|::|\.)[A-Za-z_]\w*\(")
# Receivers that are a script's usual variable or module names (`model.fit(`, `data.map(`,
# `self.run(`), not a class of TensorFlow's: whatever source file shares the name says nothing.
_SCRIPT_NAMES = frozenset({"model", "models", "self", "data", "input", "inputs", "output", "outputs", "image", "images", "config",
                           "utils", "util", "tools", "main", "test", "path", "args", "result", "results", "layer", "layers", "logger",
                           "options", "train", "net", "network", "np", "jnp", "tf", "os", "sys", "torch", "keras", "random", "math",
                           "time", "json", "plt"})
# Each hump starts with its capital, so a word splits one way only (no backtracking on long runs).
_CAMEL = re.compile(r"(?<![\w./:])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)(?![\w(])")


@dataclass(frozen=True)
class NameHit:
    category: str
    score: int
    distance: int
    source: str
    view: FrameView | None = None
    # A helper's fatal line: the subsystems whose kernels, named elsewhere in the text, claim it.
    yields_to: tuple[str, ...] = ()


def _camel(snake: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in snake.split("_") if p)


def frame_place(view: FrameView, neighbours: Sequence[str] = ()) -> layout.Place | None:
    """What the index says of one frame: its function (as printed: template arguments and a
    return type say more than the normalized name), else its source file, else its library."""
    if view.python:
        return None
    if view.name:
        place = layout.symbol(view.frame.function or view.name, neighbours)
        if place is not None:
            return place
    if view.frame.file:
        place = layout.source_file(view.frame.file, neighbours)
        if place is not None:
            return place
    if view.module_base:
        return layout.library(view.module_base)
    return None


def frame_hits(views: Sequence[FrameView], penalty: int, neighbours: Sequence[str] = (), discount: int = 0,
               fault_kind: str | None = None) -> list[NameHit]:
    hits = []
    for distance, view in enumerate(views[:MAX_FRAMES]):
        place = frame_place(view, neighbours)
        if place is None and fault_kind == "illegal-instruction" and (owner := layout.declared(view.frame.function or "")):
            place = layout.Place("library-load", f"code of namespace {owner}, which TensorFlow's headers declare")
        if place is None:
            continue
        if fault_kind == "illegal-instruction":
            # An instruction TensorFlow's own code cannot execute: its build targets another CPU,
            # whichever subsystem the code belongs to.
            place = layout.Place("library-load", f"{place.why}; an illegal instruction in TensorFlow's own code is a build for another CPU")
        hits.append(NameHit(place.category, FRAME_PRIORITY - discount - penalty * distance, distance,
                            f"frame #{view.index} {view.label}: {place.why}", view))
    return hits


# Faults a fatal log line does not cause: with these, a log line before the crash is context (what
# the process was doing), not the place that ended it.
_NOT_FROM_A_LOG_LINE = frozenset({"null-deref", "invalid-access", "bus-error", "illegal-instruction", "divide-by-zero", "stack-overflow"})


def message_hits(message: str | None, neighbours: Sequence[str] = (), fault_kind: str | None = None) -> list[NameHit]:
    """The fatal line's own source file (the first `file:line` of the message)."""
    if not message or fault_kind in _NOT_FROM_A_LOG_LINE:
        return []
    for ref in layout.file_refs(message[:2000])[:1]:
        place = layout.source_file(ref, neighbours)
        if place is not None:
            return [NameHit(place.category, MESSAGE_PRIORITY, 0, f"the fatal line's source: {place.why}", yields_to=layout.callers(ref))]
    m = _CHECK_STEM.search(message[:2000])
    if m:
        place = layout.file_stem(m.group(1), neighbours)
        if place is not None:
            return [NameHit(place.category, MESSAGE_PRIORITY - 2, 0, f"the CHECK's source: {place.why}")]
    return []


# A line about PyTorch: its CamelCase words are PyTorch's classes (`SummaryWriter`, `DataLoader`),
# whatever TensorFlow op shares the name.
_PYTORCH = re.compile(r"(?i)\bpy ?torch\b|\btorch\.[a-z]")


def _ops_in(line: str) -> list[str]:
    names = []
    for m in _TF_API.finditer(line):
        if m.group(1):
            names.append(m.group(1))
            continue
        names += layout.api_ops(m.group(2)) or layout.api_ops(m.group(3))
        names.append(_camel(m.group(3)))
    names += _OP_TAG.findall(line)
    if _PYTORCH.search(line):
        return names
    for word in _CAMEL.findall(line):
        names.append(word)
        if word.endswith("Op"):
            names.append(word[:-2])  # a kernel class: InterleaveDatasetOp runs InterleaveDataset
    return names


def line_hits(context: Sequence[tuple[int, str, bool]], line_penalty: int, reach: int, discount: int = 0) -> list[NameHit]:
    """Ops the text's lines name: the nearest line naming a known op, per category."""
    best: dict[str, NameHit] = {}
    for distance, line, _superseded in context:
        if len(line) > 2000:
            line = line[:2000]
        for name in _ops_in(line):
            place = layout.op(name)
            if place is None:
                continue
            score = LINE_OP_PRIORITY - discount - line_penalty * min(distance, reach)
            hit = best.get(place.category)
            if hit is None or score > hit.score:
                shown = " ".join(line.split())[:120]
                best[place.category] = NameHit(place.category, score, distance, f"the line `{shown}` names {place.why}")
            break
        for m in _CALL.finditer(line):
            if m.group(1) in _SCRIPT_NAMES:
                continue
            stem = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", m.group(1)).lower()
            place = layout.file_stem(stem)
            if place is None or place.category in best:
                continue
            shown = " ".join(line.split())[:120]
            score = LINE_CALL_PRIORITY - discount - line_penalty * min(distance, reach)
            best[place.category] = NameHit(place.category, score, distance, f"the line `{shown}` calls into {place.why}")
            break
    return list(best.values())
