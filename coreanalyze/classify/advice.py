"""Concrete next steps, chosen from the [[advice]] entries of the rules by category, fault kind,
whether a custom op is involved, the frameworks the process loaded, the GPU call the crashing
thread is in, the signal's code, the process's environment and its platform (a microcontroller's
fault dump has no mapped files or ulimits); {placeholders} are filled from the crash."""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Mapping

from coreanalyze.base.vocabulary import Platform
from coreanalyze.classify.rules import AdviceEntry, RuleSet

MAX_LINES = 6
# Fault kinds whose own advice replaces the generic advice of the category: an allocation that
# failed is not the heap damage the allocator category's advice is about.
KIND_OVER_CATEGORY = ("out-of-memory",)
_FORMATTER = string.Formatter()


def _fill(line: str, values: Mapping[str, str | None]) -> str | None:
    """The line with its placeholders filled; None when one of them has no value."""
    try:
        fields = [f for _, f, _, _ in _FORMATTER.parse(line) if f is not None]
    except ValueError:
        return line  # a stray brace in a user's text: show it as written
    for f in fields:
        if not values.get(f):
            return None
    try:
        return line.format_map({k: v for k, v in values.items() if v})
    except (KeyError, IndexError, ValueError):
        return None


@dataclass(frozen=True)
class ProcessFacts:
    """What the advice may depend on beyond the verdict: the frameworks the process loaded, the
    role of the GPU call the crashing thread is in, the signal's si_code name, the names of the
environment variables it set, and whether it ran on an OS or on a microcontroller."""

    loaded: frozenset[str] = frozenset()
    host_call: str | None = None
    signal_code: str | None = None
    environment: frozenset[str] | None = None  # the variables the process set; None: not known
    platform: str = Platform.HOSTED


def _applies(entry: AdviceEntry, category: str, fault_kind: str, custom_op: bool, facts: ProcessFacts) -> bool:
    if entry.category is not None and entry.category != category:
        return False
    if entry.fault_kind is not None and entry.fault_kind != fault_kind:
        return False
    if entry.custom_op is not None and entry.custom_op != custom_op:
        return False
    if entry.loaded and not facts.loaded.intersection(entry.loaded):
        return False
    if entry.host_call is not None and entry.host_call != facts.host_call:
        return False
    if entry.signal_code is not None and entry.signal_code != facts.signal_code:
        return False
    if entry.platform is not None and entry.platform != facts.platform:
        return False
    if entry.unset and facts.environment is not None and facts.environment.intersection(entry.unset):
        return False
    return True


def advise(
    category: str, fault_kind: str, custom_op: bool, values: Mapping[str, str | None], rules: RuleSet,
    facts: ProcessFacts = ProcessFacts(),
) -> list[str]:  # fmt: skip
    entries = [e for e in rules.advice if _applies(e, category, fault_kind, custom_op, facts)]
    if any(e.custom_op for e in entries):
        # The custom-op advice says it better than the generic advice for its category.
        entries = [
            e for e in entries if not (e.origin == "built-in" and e.custom_op is None and e.fault_kind is None and e.category == category)
        ]
    if fault_kind in KIND_OVER_CATEGORY:
        entries = [e for e in entries if not (e.origin == "built-in" and e.fault_kind is None and e.category == category)]
    # A user's advice first (it knows the local setup), then the most specific of ours.
    entries.sort(key=lambda e: (e.origin == "built-in", -e.specificity))
    lines: list[str] = []
    for entry in entries:
        for raw in entry.lines:
            line = _fill(raw, values)
            if line and line not in lines:
                lines.append(line)
            if len(lines) >= MAX_LINES:
                return lines
    return lines
