"""Crash groups from the per-core records: summary.json, summary.md, index.html and cores.jsonl.

A group is every analyzed core with the same classification signature; with it go its days
(timeline), its versions, hosts and correlations (breakdown), the known crash it is
(coreanalyze.known) and, against a previous batch, whether it is new, growing or back (since).
Everything here is a pure function of the records (and of OUT/since.json and the known-crash
files), so an interrupted-and-resumed batch, an uninterrupted one and a merge of shards produce
the same summary.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Iterable

from markupsafe import Markup

from coreanalyze import __version__
from coreanalyze.batch import breakdown, since, timeline
from coreanalyze.batch.facts import crash_facts
from coreanalyze.batch.jobs import JobEvent, job_events
from coreanalyze.batch.shard import Shard
from coreanalyze.batch.store import ANALYZED, BatchStore, CoreRecord, lines_of
from coreanalyze.known import KnownCrashes, load_known

SUMMARY_SCHEMA = "coreanalyze-batch/1"
NO_SIGNATURE = "(no signature)"
UNKNOWN_HOST = "unknown"
SUMMARY_FILE = "summary.json"
INDEX_FILE = "index.html"
MARKDOWN_FILE = "summary.md"
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


def example_of(members: list[CoreRecord]) -> CoreRecord:
    """The group's showcase: a complete analysis before a partial one, then the earliest."""
    return min(members, key=lambda r: (_STATUS_RANK.get(r.status, 9), r.timestamp or 0.0, r.path, r.identity))


def group_known(members: list[CoreRecord], example: CoreRecord, known: KnownCrashes | None) -> dict[str, Any] | None:
    """The known crash most of the group's cores are, matched again with the database in force
    (a record's own verdict stands where this database has no match); None when none is."""
    verdicts: dict[str, dict[str, Any]] = {}
    counts: Counter = Counter()
    # The example's own verdict first: its versions are the ones "this core ran" speaks of.
    for r in sorted(members, key=lambda r: r is not example):
        facts = crash_facts(r)
        entry = known.match(facts) if known is not None else None
        verdict = entry.verdict(facts) if entry is not None else r.known
        if verdict and isinstance(verdict.get("id"), str):
            verdicts.setdefault(verdict["id"], verdict)
            counts[verdict["id"]] += 1
    if not verdicts:
        return None
    best = min(verdicts, key=lambda i: (-counts[i], i))
    return {**verdicts[best], "cores": counts[best]}


def build_group(signature: str, members: list[CoreRecord], batch: breakdown.BatchCounts | None = None,
                known: KnownCrashes | None = None, span: dict[str, Any] | None = None) -> dict[str, Any]:
    example = example_of(members)
    times = [r.timestamp for r in members if timeline.day_of(r.timestamp)]  # a broken clock is no time
    hosts = Counter(r.host or UNKNOWN_HOST for r in members)
    host_sources = {r.host or UNKNOWN_HOST: r.host_source for r in members}
    batch = batch or breakdown.BatchCounts.of(members)
    versions, packages, attribute_counts = breakdown.group_breakdown(members, batch)
    days = timeline.per_day(times)
    return {
        "signature": signature,
        "count": len(members),
        "partial": sum(1 for r in members if r.status == "partial"),
        "first_seen": iso_time(min(times)) if times else None,
        "last_seen": iso_time(max(times)) if times else None,
        "hosts": [{"host": h, "count": n, "from": host_sources.get(h)} for h, n in sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0]))],
        "per_day": days,
        "chart": timeline.trend_bins(days, span or timeline.period(days)),
        "time_sources": dict(sorted(Counter(r.timestamp_source or "unknown" for r in members).items())),
        "category": _most_common(r.category for r in members) or "unknown",
        "fault_kind": _most_common(r.fault_kind for r in members) or "unknown",
        # Snapshots of stuck processes group by their wait signature, apart from crashes.
        "hang": _most_common(r.fault_kind for r in members) == "hang",
        "culprit": {"function": example.culprit.get("function"), "module": example.culprit.get("module")},
        "summary": example.summary,
        "signal": example.signal,
        "executables": sorted({r.executable for r in members if r.executable}),
        "example": {
            "path": example.path, "report_html": example.report_html, "report_json": example.report_json,
            # batch --shrink: the example shrunk to attach to a ticket (relative to the output directory)
            "shrunk": example.shrunk, "shrunk_size": example.shrunk_size,
        },
        "versions": versions,
        "packages": packages,
        "correlations": breakdown.correlations(attribute_counts, len(members), batch),
        "known": group_known(members, example, known),
        "trend": None,
        "cores": sorted(r.identity for r in members),
    }


def crash_groups(analyzed: list[CoreRecord]) -> dict[str, list[CoreRecord]]:
    """The analyzed cores by signature, in record order."""
    # A GPU core read with its CPU core is that crash's, not a second one.
    companions = {os.path.realpath(r.gpu_core) for r in analyzed if r.gpu_core}
    by_signature: dict[str, list[CoreRecord]] = {}
    for r in analyzed:
        if os.path.realpath(r.path) in companions:
            continue
        by_signature.setdefault(r.signature or NO_SIGNATURE, []).append(r)
    return by_signature


def counted(analyzed: list[CoreRecord]) -> tuple[list[CoreRecord], list[JobEvent]]:
    """The cores that count in the groups, and the jobs: a job's other ranks are folded into the
    core of its root cause, so that a job counts once (batch/jobs.py)."""
    events = job_events(analyzed)
    folded = {id(r) for e in events for r in e.members if r is not e.representative}
    return [r for r in analyzed if id(r) not in folded], events


def group_examples(records: list[CoreRecord]) -> list[CoreRecord]:
    """Each crash group's example core (what `batch --shrink` makes attachable)."""
    return [example_of(members) for members in crash_groups(counted([r for r in records if r.status in ANALYZED])[0]).values()]


def build_summary(records: list[CoreRecord], shard: Shard | None = None, known: KnownCrashes | None = None,
                  baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    analyzed = [r for r in records if r.status in ANALYZED]
    events_of, events = counted(analyzed)
    by_signature = crash_groups(events_of)
    batch = breakdown.BatchCounts.of(events_of)
    span = timeline.period(d for d in map(timeline.day_of, (r.timestamp for r in events_of)) if d)
    by_representative = {id(e.representative): e for e in events}
    groups = []
    for sig, members in by_signature.items():
        group = build_group(sig, members, batch, known, span)
        # A job's ranks under its root cause; the group's count and trend count the job once.
        group["jobs"] = [by_representative[id(r)].to_dict(sig) for r in members if id(r) in by_representative]
        group["job_cores"] = sum(j["cores"] for j in group["jobs"])
        groups.append(group)
    groups.sort(key=lambda g: (-g["count"], _negated(g["last_seen"]), g["signature"]))
    if baseline is not None:
        for g in groups:
            g["trend"] = since.trend_of(g["signature"], g["cores"], baseline)
    states = Counter(g["trend"]["state"] for g in groups if g["trend"])
    # A shard sees part of the cores: what it lacks may be in another shard, so only the merge says "gone".
    gone = since.gone_groups(set(by_signature), baseline) if baseline is not None and shard is None else []
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
            "known_groups": sum(1 for g in groups if g["known"]),
            # Analyzed cores whose time is missing or implausible (before 2000, far ahead):
            # left out of first/last seen, the days and the trends.
            "without_time": sum(1 for r in analyzed if not timeline.day_of(r.timestamp)),
        },
        "period": span,
        "thresholds": {
            "correlation_min_count": breakdown.MIN_COUNT,
            "correlation_min_ratio": breakdown.MIN_RATIO,
            **since.thresholds(),
        },
        "since": None if baseline is None else {
            "previous": baseline.get("previous", []),
            "new": states["new"],
            "growing": states["growing"],
            "back": states["back"],
            "steady": states["steady"],
            "gone": len(gone),
        },
        "groups": groups,
        # Cores of one multi-process job, each counted once in the groups under its root cause.
        "jobs": [e.to_dict(e.representative.signature or NO_SIGNATURE) for e in events],
        "gone": gone,
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
    from coreanalyze.batch.indexview import index_view
    from coreanalyze.render.html import CONTENT_SECURITY_POLICY
    from coreanalyze.render.templating import html_environment

    template = html_environment().get_template("batch_index.html.j2")
    return template.render(s=summary, v=index_view(summary), csp=Markup(CONTENT_SECURITY_POLICY))


def render_markdown(summary: dict[str, Any]) -> str:
    from coreanalyze.render.templating import markdown_environment

    template = markdown_environment().get_template("batch_summary.md.j2")
    return template.render(s=summary, correlation_text=breakdown.correlation_text)


def write_outputs(store: BatchStore, records: list[CoreRecord], shard: Shard | None = None,
                  known: KnownCrashes | None = None) -> dict[str, Any]:
    """cores.jsonl, summary.json, summary.md and index.html from the records (and OUT/since.json,
    when the batch has a baseline); returns the summary."""
    summary = build_summary(records, shard, known if known is not None else load_known(), since.read_baseline(store.out))
    store.write_output(CORES_FILE, lines_of(records))
    store.write_output(SUMMARY_FILE, json.dumps(summary, indent=2, sort_keys=False) + "\n")
    store.write_output(MARKDOWN_FILE, render_markdown(summary))
    store.write_output(INDEX_FILE, render_index(summary))
    return summary
