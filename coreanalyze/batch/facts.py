"""What a batch keeps of one core's report in its record (coreanalyze/known/facts.py says which
facts): filled once per core, read back by the fleet's view and the known-crash database.
"""

from __future__ import annotations

from coreanalyze.base.model import Report
from coreanalyze.batch.store import CoreRecord
from coreanalyze.known import CrashFacts
from coreanalyze.known.facts import HOSTNAME, clip, facts_of, kept_facts


def fill_facts(record: CoreRecord, report: Report) -> None:
    for name, value in kept_facts(report).items():
        setattr(record, name, value)


def hostname_from_core(core_path: str, report: Report) -> str | None:
    """The HOSTNAME the process had in its environment (containers set it: the pod's or the
    container's name), read again from the core's notes only when the report saw the variable,
    so that cores without it cost nothing more."""
    if "HOSTNAME" not in (report.environment.get("environment_variable_names") or []):
        return None
    from coreanalyze.corefile import read_core

    try:
        value = read_core(core_path).environ.get("HOSTNAME")
    except Exception:  # noqa: BLE001 - a core the analysis could read; a second look that fails costs only the name
        return None
    return clip(value) if value and HOSTNAME.match(value) else None


def crash_facts(record: CoreRecord) -> CrashFacts:
    """The known-crash database's view of a record."""
    return facts_of(
        signature=record.signature,
        summary=record.summary,
        fault_kind=record.fault_kind,
        packages=record.packages,
        versions=record.versions,
        frames=record.frames,
        ops=record.ops,
        abort_message=record.abort_message,
        gpu_exception=record.gpu_exception,
    )
