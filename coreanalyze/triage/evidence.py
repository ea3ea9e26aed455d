"""Frameless evidence: what a line of a crash text says happened, when no frame says it.

The rules are data (evidence.toml): each names, for the words a kernel log, strace, a runtime's or
a loader's error, a version banner or an allocator's dump uses, the signal it implies, the
subsystem and the fault kind, with a confidence. The parser runs after every format parser and
reads every line (a line a parser used still says what it says); its finding carries the
signal (weakly, so a parser's own signal wins), the matched line as a low-weight message (unless
the words matched are a frame's name: a frame says where, never what), and the rules that matched
(a finding that only supports the others, like a shell's verdict: it is not listed among the
text's formats). `apply` then settles the classification:
a rule fills in what the classifier left `unknown`, and a strong rule replaces what the
classifier read only from weak evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable

from coreanalyze import rulesdata
from coreanalyze.base.model import Classification
from coreanalyze.base.vocabulary import FaultKind
from coreanalyze.classify import layout
from coreanalyze.rulesdata.kinds import TRIAGE_EVIDENCE
from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits
from coreanalyze.triage.frame_shapes import frame_on
from coreanalyze.triage.signals import normalize_name

FORMAT = "evidence"
# A fault kind the classifier reads from a signal alone: a stronger rule says what the signal meant.
_WEAK_KINDS = {FaultKind.UNKNOWN, FaultKind.ABORT, FaultKind.INVALID_ACCESS, FaultKind.CHECK_FAILURE, FaultKind.SENT_SIGNAL}
# Source paths in a matched line ("tensorflow/core/common_runtime/dml/dml_command_recorder.cc").
# The weight of a matched line as the crash's message: below every message a format parser reads.
_LINE_MESSAGE = fd.MESSAGE_FROM_FRAME_ARGS - 1
_SOURCE_PATH = re.compile(r"(?:[A-Za-z]:)?[\w.+\\/-]{1,400}\.(?:cc|cpp|cu|h|hpp|c|mm)(?=[:\s\]\"')]|$)")


@dataclass(frozen=True)
class EvidenceRule:
    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()  # one must be in a line for the pattern to be tried
    signal: str | None = None
    category: str | None = None
    fault_kind: str | None = None
    confidence: float = 0.5
    # The line reports an error the process raised instead of dying (a library that would not
    # load): where nothing died, that error is the event and the text's other lines only context.
    states_error: bool = False
    # Read only when nothing else in the text states a crash or an error (a report that tells
    # what happened in words): never weighed against what a parser or another rule found.
    last_resort: bool = False
    description: str = ""


@dataclass(frozen=True)
class Hit:
    rule: EvidenceRule
    line: str
    path_category: str | None = None  # the subsystem the line's source path names


@dataclass(frozen=True)
class EvidenceRules:
    rules: tuple[EvidenceRule, ...]
    strong: float
    # Every rule's needles in one pattern: a line with none of them (nearly every line) costs one search.
    any_needle: re.Pattern[str] | None = None
    # The same for the `last_resort` rules, which read a text only when nothing else did.
    any_last_resort_needle: re.Pattern[str] | None = None


class EvidenceError(ValueError):
    """The evidence rules file is malformed."""


@lru_cache(maxsize=1)
def default_rules() -> EvidenceRules:
    text = resources.files(__package__).joinpath("evidence.toml").read_text(encoding="utf-8")
    return load_rules(text)


def load_rules(text: str) -> EvidenceRules:
    data = rulesdata.parse(text, TRIAGE_EVIDENCE, "evidence rules")
    strong = float(data.get("settings", {}).get("strong", 0.8))
    rules = []
    seen: set[str] = set()
    kinds = {k.value for k in FaultKind}
    for t in data.get("evidence", []):
        name = t.get("name")
        if not name or name in seen or "pattern" not in t or not t.get("needles"):
            raise EvidenceError(f"evidence rule {name!r}: needs a unique name, a pattern and its needles")
        seen.add(name)
        kind = t.get("fault_kind")
        if kind is not None and kind not in kinds:
            raise EvidenceError(f"evidence rule {name}: unknown fault kind {kind!r}")
        signal = t.get("signal")
        if signal is not None and normalize_name(signal) is None:
            raise EvidenceError(f"evidence rule {name}: unknown signal {signal!r}")
        rules.append(
            EvidenceRule(
                name=name,
                pattern=re.compile(t["pattern"]),
                needles=tuple(t["needles"]),
                signal=normalize_name(signal) if signal else None,
                category=t.get("category"),
                fault_kind=kind,
                confidence=float(t.get("confidence", 0.5)),
                states_error=bool(t.get("states_error", False)),
                last_resort=bool(t.get("last_resort", False)),
                description=t.get("description", ""),
            )
        )
    return EvidenceRules(tuple(rules), strong, _needles(r for r in rules if not r.last_resort), _needles(r for r in rules if r.last_resort))


def _needles(rules: Iterable[EvidenceRule]) -> re.Pattern[str] | None:
    needles = sorted({n for r in rules for n in r.needles}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, needles))) if needles else None


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    """One finding for the whole text: the rules that matched, in text order (first line wins);
    not the `last_resort` rules (parse_words)."""
    return _parse(lines, last_resort=False)


def parse_words(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    """The `last_resort` rules' finding: what a text that shows no crash and no error tells in
    words ("this line segfaults", "the program hangs"); its lines are never the crash's message."""
    return _parse(lines, last_resort=True)


def _parse(lines: list[str], *, last_resort: bool) -> list[fd.Finding]:
    # Every line is read: a line a parser used still says what it says.
    rules = default_rules()
    finding: fd.Finding | None = None
    matched: set[str] = {r.name for r in rules.rules if r.last_resort != last_resort}
    any_needle = rules.any_last_resort_needle if last_resort else rules.any_needle
    for i, line in enumerate(lines):
        if not line or len(matched) == len(rules.rules) or any_needle is None or not any_needle.search(line):
            continue
        for rule in rules.rules:
            if rule.name in matched or not any(n in line for n in rule.needles) or (m := rule.pattern.search(line)) is None:
                continue
            matched.add(rule.name)
            if finding is None:
                # Not a format of its own (formats lists what printed the crash): it only supports.
                finding = fd.Finding(FORMAT, i, substantive=False)
            address = next((fd.hex_int(v) for k, v in m.groupdict().items() if k.startswith("address") and v), None)
            if rule.signal is not None:
                strength = fd.SIGNAL_WITH_ADDRESS if address is not None else fd.SIGNAL_IMPLIED
                finding.set_signal(rule.signal, strength, address=address)
            weight = None if last_resort else _message_weight(line, m.group(0))
            if weight is not None:
                finding.add_message(weight, line.strip()[: limits.MAX_MESSAGE_CHARS])
            finding.evidence.append(Hit(rule, " ".join(line.split())[:300]))
    return [finding] if finding is not None else []


def _message_weight(line: str, matched: str) -> int | None:
    """How much a matched line counts as the crash's message, or None when it is no message.

    A line whose matched words are the function or library of the frame it carries ("#5 0x.. in
    tflite::ops::...") says where the code ran, not what went wrong: it supports the verdict but is
    never the message. A line that carries a frame and says more ("Exception thrown at 0x..
    (tensorflow.dll): 0xC0000005: Access violation", "Could not load library libcudnn...: undefined
    symbol: _ZN5cudnn...") is one, after any line that carries no frame."""
    got = frame_on(line)
    if got is None:
        return _LINE_MESSAGE
    frame = got[0]
    if any(matched in part for part in (frame.function, frame.module) if part):
        return None
    return _LINE_MESSAGE - 1


def path_category(line: str, rule_set, pattern: re.Pattern[str] | None = None) -> str | None:
    """The subsystem a source path in the line names: by the frame rules' `source_file` table
    (glibc's malloc.c), else by TensorFlow's layout (layout.py: its directories and basenames).
    A rule whose pattern has a group named `source` says which path of the line is about the
    error (not the logging code's own, which a log prefix names first)."""
    found = pattern.search(line) if pattern is not None and "source" in pattern.groupindex else None
    if found is not None and found.group("source"):
        line = found.group("source")
    for m in _SOURCE_PATH.finditer(line):
        path = m.group(0).replace("\\", "/")
        best = None
        for rule in rule_set.rules:
            if rule.source_file is not None and rule.source_file.search(path) and (best is None or rule.priority > best.priority):
                best = rule
        if best is not None:
            return best.category
        place = layout.source_file(path)
        if place is not None:
            return place.category
    return None


def apply(classification: Classification, hits: list[Hit], rule_set=None) -> None:
    """Settle category and fault kind with the rules that matched (see the module's docstring)."""
    if not hits:
        return
    strong = default_rules().strong
    framed = classification.culprit.function is not None
    # Nothing died and no frame named the code: the error a line states is what happened.
    erred = not framed and classification.fault_kind == FaultKind.UNKNOWN
    for hit in sorted(hits, key=lambda h: -h.rule.confidence):
        rule = hit.rule
        category = rule.category
        if category is None and rule_set is not None:
            category = path_category(hit.line, rule_set, rule.pattern)
        said = []
        if category and category != classification.category:
            if classification.category == "unknown" or (rule.confidence >= strong and not framed) or (rule.states_error and erred):
                classification.category = category
                said.append(f"category {category}")
        kind = rule.fault_kind
        if kind and kind != classification.fault_kind:
            if classification.fault_kind == FaultKind.UNKNOWN or (rule.confidence >= strong and classification.fault_kind in _WEAK_KINDS):
                classification.fault_kind = FaultKind(kind)
                said.append(f"fault kind {kind}")
        if said:
            classification.evidence.append(
                f"evidence rule {rule.name} ({rule.confidence:.2f}): {' and '.join(said)} from the line: {hit.line[:160]}"
            )
        elif rule.last_resort:
            classification.evidence.append(f"evidence rule {rule.name}: nothing printed a verdict; the report says it in words: {hit.line[:160]}")
