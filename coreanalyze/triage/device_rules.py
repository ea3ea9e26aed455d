"""The rules data of the device and OS fault-report parsers (device_faults.toml): the phrases a
handler writes (an ESP-IDF panic reason, Zephyr's fault banner, a Windows event name) and the bits
of the Cortex-M fault status registers, as signals and fault kinds; and how a parser puts one
into its finding.

A signal goes into the finding as the handler named it; a fault kind no signal says (a stack
overflow, a hang, a damaged heap) goes in as strong frameless evidence (evidence.py's Hit), so
the classifier's reading of the signal is replaced by what the handler said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.base.vocabulary import FaultKind, Platform
from coreanalyze.rulesdata.kinds import TRIAGE_DEVICE_FAULTS
from coreanalyze.triage import findings as fd
from coreanalyze.triage.evidence import EvidenceRule, Hit
from coreanalyze.triage.signals import normalize_name

# What a handler's own verdict weighs against the classifier's reading of a signal.
CONFIDENCE = 0.9
# A subsystem read from the text around a verdict only fills in an unknown category (below
# evidence.toml's `strong`: a frame that names the code decides).
CATEGORY_CONFIDENCE = 0.6


@dataclass(frozen=True)
class Verdict:
    name: str
    family: str
    pattern: re.Pattern[str]
    signal: str | None = None
    code: str | None = None
    fault_kind: str | None = None
    address: str | None = None  # the register that holds the fault address
    category: str | None = None  # the subsystem, where the family's parser says when it applies
    description: str = ""

    def evidence(self, category: str | None = None) -> EvidenceRule | None:
        if self.fault_kind is None and category is None:
            return None
        return EvidenceRule(
            name=self.name, pattern=self.pattern, needles=(), signal=self.signal, category=category,
            fault_kind=self.fault_kind, confidence=CONFIDENCE if category is None else CATEGORY_CONFIDENCE, description=self.description,
        )  # fmt: skip


@dataclass(frozen=True)
class FaultBit:
    register: str  # CFSR or HFSR
    bit: int
    name: str
    signal: str | None = None
    code: str | None = None
    fault_kind: str | None = None
    address: str | None = None  # MMFAR / BFAR, valid when the register's VALID bit is set
    priority: int = 0
    description: str = ""
    phrase: re.Pattern[str] | None = None  # what a decoder (Mbed's crash_log_parser) prints for the bit

    def as_verdict(self) -> Verdict:
        return Verdict(
            name=f"cortex-m-{self.name.lower()}", family="cortex-m", pattern=re.compile(re.escape(self.name)),
            signal=self.signal, code=self.code, fault_kind=self.fault_kind, description=f"{self.register}.{self.name}: {self.description}",
        )  # fmt: skip


@dataclass(frozen=True)
class DeviceRules:
    verdicts: tuple[Verdict, ...]
    bits: tuple[FaultBit, ...]
    platforms: dict[str, str] = field(default_factory=dict)  # family -> vocabulary.Platform

    def family(self, name: str) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.family == name)

    def match(self, family: str, phrase: str) -> Verdict | None:
        """The first verdict of the family whose pattern is in the phrase."""
        return next((v for v in self.family(family) if v.pattern.search(phrase)), None)


RULES_FILE = Path(__file__).with_name("device_faults.toml")


class DeviceRulesError(ValueError):
    """The device fault rules file is malformed."""


@lru_cache(maxsize=1)
def default_rules() -> DeviceRules:
    return rules_of(rulesdata.shipped(RULES_FILE, TRIAGE_DEVICE_FAULTS))


def load_rules(text: str) -> DeviceRules:
    """Rules from a file's text (a test's, a user's)."""
    return rules_of(rulesdata.parse(text, TRIAGE_DEVICE_FAULTS, "device fault rules"))


def rules_of(data: dict) -> DeviceRules:
    kinds = {k.value for k in FaultKind}

    def checked(where: str, t: dict) -> dict:
        if t.get("fault_kind") is not None and t["fault_kind"] not in kinds:
            raise DeviceRulesError(f"{where}: unknown fault kind {t['fault_kind']!r}")
        if t.get("signal") is not None and normalize_name(t["signal"]) is None:
            raise DeviceRulesError(f"{where}: unknown signal {t['signal']!r}")
        return t

    verdicts = []
    seen: set[str] = set()
    for t in data.get("verdict", []):
        if t["name"] in seen:
            raise DeviceRulesError(f"device fault rule {t['name']}: the name is used twice")
        seen.add(t["name"])
        checked(f"device fault rule {t['name']}", t)
        verdicts.append(
            Verdict(
                name=t["name"], family=t["family"], pattern=re.compile(t["pattern"]), signal=t.get("signal"), code=t.get("code"),
                fault_kind=t.get("fault_kind"), address=t.get("address"), category=t.get("category"), description=t.get("description", ""),
            )  # fmt: skip
        )
    bits = [
        FaultBit(
            register=t["register"], bit=t["bit"], name=t["name"], signal=t.get("signal"), code=t.get("code"),
            fault_kind=t.get("fault_kind"), address=t.get("address"), priority=t.get("priority", 0), description=t.get("description", ""),
            phrase=re.compile(t["phrase"]) if t.get("phrase") else None,
        )  # fmt: skip
        for t in (checked(f"fault bit {t.get('name')}", t) for t in data.get("fault_bit", []))
    ]
    platforms = {}
    for t in data.get("family", []):
        if t["platform"] not in tuple(Platform):
            raise DeviceRulesError(f"device family {t['name']}: unknown platform {t['platform']!r} (one of: {', '.join(Platform)})")
        platforms[t["name"]] = t["platform"]
    unplaced = sorted({v.family for v in verdicts} - platforms.keys())
    if unplaced:
        raise DeviceRulesError(f"device families without a [[family]] row: {', '.join(unplaced)}")
    return DeviceRules(tuple(verdicts), tuple(bits), platforms)


def apply(
    finding: fd.Finding, verdict: Verdict, line: str, address: int | None = None, category: str | None = None, detail: str | None = None
) -> None:
    """Put what a verdict says into a finding: where the process ran (its family's platform), its
    signal (with the fault address and the si_code name), the fault kind a signal does not say as
    strong evidence, a subsystem the caller found applies as weak evidence, and the handler's own
    words for the fault as the report's class."""
    finding.platform = finding.platform or default_rules().platforms.get(verdict.family)
    if detail and finding.detail is None:
        # A kind the handler names beside a signal leads its class, as a sanitizer's does
        # ("stack-overflow (...)"): the class, not the signal, is then what the summary says.
        named = verdict.fault_kind is not None and verdict.signal is not None
        finding.detail = (f"{verdict.fault_kind} ({detail})" if named else detail)[:200]
    if verdict.signal is not None:
        strength = fd.SIGNAL_WITH_ADDRESS if address is not None else fd.SIGNAL_NAMED
        finding.set_signal(normalize_name(verdict.signal), strength, address=address, code_name=verdict.code)
    rule = verdict.evidence(category)
    if rule is not None and all(h.rule.name != rule.name for h in finding.evidence):
        finding.evidence.append(Hit(rule, " ".join(line.split())[:300]))
