"""Classification of a crash: fault kind, subsystem category, culprit frame, signature,
summary, evidence and advice. The rules are data (rules.toml and the skip_*.txt lists)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coreanalyze.classify.rules import RuleSet, default_rules, load_rules

if TYPE_CHECKING:
    from coreanalyze.classify.classifier import classify
    from coreanalyze.classify.faultkind import fault_kind
    from coreanalyze.classify.signature import signature_of

__all__ = ["RuleSet", "classify", "default_rules", "fault_kind", "load_rules", "signature_of"]

# Imported on first use: an analysis reads the rules long before it classifies (and imports the
# classifier beside the debugger, see coreanalyze.pipeline.warmup).
_LATER = {
    "classify": "coreanalyze.classify.classifier",
    "fault_kind": "coreanalyze.classify.faultkind",
    "signature_of": "coreanalyze.classify.signature",
}


def __getattr__(name: str) -> Any:
    if name in _LATER:
        import importlib

        return getattr(importlib.import_module(_LATER[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
