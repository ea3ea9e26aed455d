"""Triage of crash text pasted into a ticket: gdb backtraces, faulthandler dumps, fatal log
lines, sanitizer reports, pystack output and abort messages -> the same data model a core
produces (without modules), ready for the classifier.

    parse_text(text, source_name) -> TriageResult(report, abort_message, formats)
    triage_text(text, source_name, rules=None) -> Report with its classification
"""

from __future__ import annotations

from coreanalyze.triage.parse import TriageResult, parse_text, triage_text

__all__ = ["TriageResult", "parse_text", "triage_text"]
