"""The op instance as every report format shows it: one line per input, values shortened."""

from __future__ import annotations

from dataclasses import dataclass

from coreanalyze.model import OpInstance
from coreanalyze.opinstance import shape_text

MAX_VALUE_TEXT = 120


@dataclass(frozen=True)
class InputRow:
    index: int
    dtype: str
    shape: str
    value: str | None


def value_text(values: list | None) -> str | None:
    if values is None:
        return None
    text = "[" + ", ".join("nan" if v is None else repr(v) for v in values) + "]"
    return text if len(text) <= MAX_VALUE_TEXT else text[: MAX_VALUE_TEXT - 1] + "…"


def input_rows(instance: OpInstance) -> list[InputRow]:
    return [
        InputRow(i, item.dtype or "(absent)", shape_text(item), value_text(item.value))
        for i, item in enumerate(instance.inputs)
    ]


def instance_lines(instance: OpInstance) -> list[str]:
    """Plain lines for the text report."""
    lines = [f"node {instance.node}  op {instance.op}" + (f"  on {instance.device}" if instance.device else "")]
    for row in input_rows(instance):
        lines.append(f"input {row.index}: {row.shape}" + (f" = {row.value}" if row.value else ""))
    return lines
