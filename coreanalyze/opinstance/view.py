"""The op instance as every report format shows it: one line per input, values shortened."""

from __future__ import annotations

from dataclasses import dataclass

from coreanalyze.base.model import OpInput, OpInstance
from coreanalyze.opinstance import shape_text

MAX_VALUE_TEXT = 120


@dataclass(frozen=True)
class InputRow:
    index: int
    dtype: str
    shape: str
    value: str | None
    detail: str | None = None  # TFLite: tensor name, quantization, allocation, buffer size
    role: str = "input"


def tensor_detail(item: OpInput) -> str | None:
    parts = []
    if item.index is not None:
        parts.append(f"tensor {item.index}")
    if item.name:
        parts.append(repr(item.name))
    if item.scale or item.zero_point:
        parts.append(f"scale {item.scale:g} zero point {item.zero_point}")
    if item.allocation:
        parts.append(item.allocation)
    if item.bytes is not None:
        size = f"{item.bytes} bytes"
        if item.needed_bytes is not None and item.needed_bytes != item.bytes:
            size += f" (the shape needs {item.needed_bytes})"
        parts.append(size)
    return ", ".join(parts) or None


def value_text(values: list | None) -> str | None:
    if values is None:
        return None
    text = "[" + ", ".join("nan" if v is None else repr(v) for v in values) + "]"
    return text if len(text) <= MAX_VALUE_TEXT else text[: MAX_VALUE_TEXT - 1] + "…"


def input_rows(instance: OpInstance) -> list[InputRow]:
    """The inputs, then (TFLite) the outputs."""
    rows = []
    for role, items in (("input", instance.inputs), ("output", instance.outputs)):
        rows += [
            InputRow(i, item.dtype or "(absent)", shape_text(item), value_text(item.value), tensor_detail(item), role)
            for i, item in enumerate(items)
        ]
    return rows


def headline(instance: OpInstance) -> str:
    """What the node is, beyond its name: op, version, index, device or delegate."""
    parts = [instance.op or "?"]
    if instance.version is not None:
        parts.append(f"version {instance.version}")
    if instance.node_index is not None:
        parts.append(f"node index {instance.node_index}")
    if instance.delegate:
        parts.append(f"delegate {instance.delegate}")
    if instance.device:
        parts.append(f"on {instance.device}")
    return ", ".join(parts)


def instance_lines(instance: OpInstance) -> list[str]:
    """Plain lines for the text report."""
    lines = [f"node {instance.node}  op {headline(instance)}"]
    for row in input_rows(instance):
        lines.append(f"{row.role} {row.index}: {row.shape}" + (f" = {row.value}" if row.value else "")
                     + (f"  ({row.detail})" if row.detail else ""))
    lines += [f"not read: {what}" for what in instance.missing]
    return lines
