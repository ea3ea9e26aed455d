"""Crash groups from the per-core records: summary.json, index.html and cores.jsonl.

A group is every analyzed core with the same classification signature. Everything here is a
pure function of the records, so an interrupted-and-resumed batch, an uninterrupted one and a
merge of shards produce the same summary.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Iterable

from markupsafe import Markup

from coreanalyze import __version__
from coreanalyze.batch.shard import Shard
from coreanalyze.batch.store import ANALYZED, BatchStore, CoreRecord, lines_of

SUMMARY_SCHEMA = "coreanalyze-batch/1"
NO_SIGNATURE = "(no signature)"
UNKNOWN_HOST = "unknown"
SUMMARY_FILE = "summary.json"
INDEX_FILE = "index.html"
CORES_FILE = "cores.jsonl"
_STATUS_RANK = {"ok": 0, "partial": 1}


def iso_time(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    try:
        return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def _most_common(values: Iterable[str | None]) -> str | None:
    counts = Counter(v for v in values if v)
    if not counts:
        return None
    # Ties are broken by name so that the answer never depends on record order.
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _example(members: list[CoreRecord]) -> CoreRecord:
    """The group's showcase: a complete analysis before a partial one, then the earliest."""
    return min(members, key=lambda r: (_STATUS_RANK.get(r.status, 9), r.timestamp or 0.0, r.path, r.identity))


def build_group(signature: str, members: list[CoreRecord]) -> dict[str, Any]:
    example = _example(members)
    times = [r.timestamp for r in members if r.timestamp is not None]
    hosts = Counter(r.host or UNKNOWN_HOST for r in members)
    return {
        "signature": signature,
        "count": len(members),
        "partial": sum(1 for r in members if r.status == "partial"),
        "first_seen": iso_time(min(times)) if times else None,
        "last_seen": iso_time(max(times)) if times else None,
        "hosts": [{"host": h, "count": n} for h, n in sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0]))],
        "category": _most_common(r.category for r in members) or "unknown",
        "fault_kind": _most_common(r.fault_kind for r in members) or "unknown",
        # Snapshots of stuck processes group by their wait signature, apart from crashes.
        "hang": _most_common(r.fault_kind for r in members) == "hang",
        "culprit": {"function": example.culprit.get("function"), "module": example.culprit.get("module")},
        "summary": example.summary,
        "signal": example.signal,
        "executables": sorted({r.executable for r in members if r.executable}),
        "example": {"path": example.path, "report_html": example.report_html, "report_json": example.report_json},
        "cores": sorted(r.identity for r in members),
    }


def build_summary(records: list[CoreRecord], shard: Shard | None = None) -> dict[str, Any]:
    analyzed = [r for r in records if r.status in ANALYZED]
    # A GPU core read with its CPU core is that crash's, not a second one.
    companions = {os.path.realpath(r.gpu_core) for r in analyzed if r.gpu_core}
    by_signature: dict[str, list[CoreRecord]] = {}
    for r in analyzed:
        if os.path.realpath(r.path) in companions:
            continue
        by_signature.setdefault(r.signature or NO_SIGNATURE, []).append(r)
    groups = [build_group(sig, members) for sig, members in by_signature.items()]
    groups.sort(key=lambda g: (-g["count"], _negated(g["last_seen"]), g["signature"]))
    statuses = Counter(r.status for r in records)
    failed = sorted((r for r in records if r.status == "failed"), key=lambda r: (r.path, r.identity))
    return {
        "schema": SUMMARY_SCHEMA,
        "tool_version": __version__,
        "shard": {"index": shard.index, "count": shard.count} if shard else None,
        "totals": {
            "files": len(records),
            "cores": len(analyzed) + statuses["failed"],
            "analyzed": statuses["ok"],
            "partial": statuses["partial"],
            "failed": statuses["failed"],
            "duplicates": statuses["duplicate"],
            "groups": len(groups),
        },
        "groups": groups,
        # --fetch: how often each wheel was downloaded in the batch (once, when workers share the cache).
        "wheels_downloaded": dict(sorted(Counter(w for r in records for w in r.wheels_downloaded).items())),
        "failed": [
            {"path": r.path, "identity": r.identity, "reason": r.reason, "host": r.host or UNKNOWN_HOST, "seen": iso_time(r.timestamp)}
            for r in failed
        ],
    }


def _negated(iso: str | None) -> str:
    # Sort later times first with an ascending sort over strings: invert each digit.
    if not iso:
        return "~"
    return "".join(chr(ord("9") - ord(c) + ord("0")) if c.isdigit() else c for c in iso)


def render_index(summary: dict[str, Any]) -> str:
    from coreanalyze.render.html import CONTENT_SECURITY_POLICY
    from coreanalyze.render.templating import html_environment

    template = html_environment().get_template("batch_index.html.j2")
    return template.render(s=summary, csp=Markup(CONTENT_SECURITY_POLICY))


def write_outputs(store: BatchStore, records: list[CoreRecord], shard: Shard | None = None) -> dict[str, Any]:
    """cores.jsonl, summary.json and index.html from the records; returns the summary."""
    summary = build_summary(records, shard)
    store.write_output(CORES_FILE, lines_of(records))
    store.write_output(SUMMARY_FILE, json.dumps(summary, indent=2, sort_keys=False) + "\n")
    store.write_output(INDEX_FILE, render_index(summary))
    return summary
