"""Which op was running: a TensorFlow kernel class, a TFLite builtin or custom op, a delegate,
or the custom-op library's kernel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from coreanalyze.classify.culprit import CulpritPick
from coreanalyze.classify.customop import CustomOpHit
from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.rules import RuleSet


@dataclass(frozen=True)
class OpFinding:
    name: str  # "LRNGradOp", "conv", "BadScaleOp", "XNNPACK delegate", "libbad_op.so"
    kind: str  # kernel | tflite-builtin | tflite-custom | tflite-delegate | custom
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
                return OpFinding(name, pattern.kind, v)
    return None
