"""Classification of a crash: fault kind, subsystem category, culprit frame, signature,
summary, evidence and advice. The rules are data (rules.toml and the skip_*.txt lists)."""

from __future__ import annotations

from coreanalyze.classify.classifier import classify
from coreanalyze.classify.faultkind import fault_kind
from coreanalyze.classify.rules import RuleSet, default_rules, load_rules
from coreanalyze.classify.signature import signature_of

__all__ = ["RuleSet", "classify", "default_rules", "fault_kind", "load_rules", "signature_of"]
