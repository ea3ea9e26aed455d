"""Which op was running: a TensorFlow kernel class, a TFLite builtin or custom op, a delegate,
or the custom-op library's kernel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from coreanalyze.classify.culprit import CulpritPick
from coreanalyze.classify.customop import CustomOpHit
from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.names import normalize_function
from coreanalyze.classify.rules import RuleSet


@dataclass(frozen=True)
class OpFinding:
    name: str  # "LRNGradOp", "conv", "BadScaleOp", "XNNPACK delegate", "libbad_op.so"
    kind: str  # kernel | dataset | tflite-builtin | tflite-custom | tflite-delegate | custom
    view: FrameView | None

    @property
    def kernel_function(self) -> str | None:
        return self.view.name if self.view is not None else None


def find_op(views: Sequence[FrameView], pick: CulpritPick, custom: CustomOpHit | None, rules: RuleSet) -> OpFinding | None:
    if custom is not None:
        for pattern in rules.ops:
            if pattern.kind == "custom":
                name = pattern.op_of(custom.view.name)
                if name:
                    return OpFinding(name, "custom", custom.view)
        return OpFinding(custom.library, "custom", custom.view)
    if not pick.native:
        return None
    # From the culprit down through the window, then the allocator frames above it (an op's
    # own frames are never there, but a TFLite kernel can call malloc directly).
    for v in [pick.view, *pick.below]:
        for pattern in rules.ops:
            if pattern.kind == "custom":
                continue
            name = pattern.op_of(v.name)
            if name:
                concrete = _concrete_kernel(views, v, name, pattern)
                if concrete is not None:
                    return OpFinding(concrete[0], pattern.kind, concrete[1])
                return OpFinding(name, pattern.kind, v)
    return None


def _concrete_kernel(views: Sequence[FrameView], base_frame: FrameView, base: str, pattern) -> tuple[str, FrameView] | None:
    """(derived class as the frame spells it, its frame) when base is an abstract kernel class
    whose Compute called the derived kernel's own method (the frame right above it)."""
    if pattern.abstract is None or not pattern.abstract.search(base) or base_frame.position == 0:
        return None
    above = views[base_frame.position - 1]
    if above.python or "::" not in above.name:
        return None
    owner = above.name.rsplit("::", 1)[0]
    if owner.rsplit("::", 1)[-1] == base or not owner.startswith(base_frame.name.rsplit("::", 2)[0] + "::"):
        return None
    spelled = normalize_function(above.frame.function or above.frame.raw_function or "", keep_templates=True) or above.name
    return (_class_part(spelled) or owner.rsplit("::", 1)[-1]), above


def _class_part(qualified_method: str) -> str | None:
    """'tensorflow::FFTCPU<false, true, 1>::DoFFT' -> 'FFTCPU<false, true, 1>' (templates kept)."""
    depth, cut = 0, []
    for i, ch in enumerate(qualified_method):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == ":" and depth == 0 and qualified_method[i : i + 2] == "::":
            cut.append(i)
    if len(cut) < 1:
        return None
    start = cut[-2] + 2 if len(cut) >= 2 else 0
    return qualified_method[start : cut[-1]] or None
