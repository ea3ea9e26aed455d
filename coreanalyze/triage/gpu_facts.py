"""The GPU and out-of-memory facts of several findings, merged into one: a PyTorch traceback
names the error, the assertion line before it the kernel's block and thread; a BFC log names
the allocator and the request, its stats block what was in use."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from coreanalyze.base import model
from coreanalyze.triage import findings as fd

T = TypeVar("T", model.GpuFault, model.OomInfo)


def merged_gpu(found: list[fd.Finding]) -> model.GpuFault | None:
    return _merged([f.gpu for f in found if f.gpu is not None])


def merged_oom(found: list[fd.Finding]) -> model.OomInfo | None:
    return _merged([f.oom for f in found if f.oom is not None])


def _merged(facts: list[T]) -> T | None:
    """Each field from the first fact (in text order) that has it."""
    if not facts:
        return None
    values = {}
    for field in dataclasses.fields(facts[0]):
        values[field.name] = next((getattr(x, field.name) for x in facts if getattr(x, field.name) is not None), None)
    return type(facts[0])(**values)
