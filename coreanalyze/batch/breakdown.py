"""Which versions, hosts and executables a crash group's cores ran, and the attributes that are
over-represented in a group against the whole batch (crash-stats' "correlations").

An attribute is one (dimension, value): ("driver", "535.104.05"), ("host", "gpu-7"),
("package:numpy", "1.26.4"). A correlation is stated only where the numbers carry it: at least
MIN_COUNT of the group's cores have the value, the group's share is at least MIN_RATIO times the
batch's share, and the batch is not all of one value. Both thresholds go into summary.json.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from coreanalyze.batch.store import CoreRecord
from coreanalyze.known.facts import VERSION_DIMENSIONS

MIN_COUNT = 3
MIN_RATIO = 2.0
MAX_CORRELATIONS = 5  # per group, the strongest first
MAX_VALUES = 20  # per dimension of a group's breakdown
MAX_PACKAGES = 40  # packages shown per group: those whose version differs across the batch
PACKAGE = "package:"
# systemd-coredump's record of where the process ran (record.coredump), as fleet dimensions.
COREDUMP_DIMENSIONS = ("unit", "container")
# Dimensions in the order people read them; packages follow.
DIMENSIONS = (*VERSION_DIMENSIONS, "host", "executable", *COREDUMP_DIMENSIONS)


def attributes(record: CoreRecord, packages: frozenset[str] = frozenset()) -> dict[str, str]:
    """The record's attributes; of its packages only those in `packages` (the ones that vary)."""
    attrs = dict(record.versions)
    if record.host:
        attrs["host"] = record.host
    if record.executable:
        attrs["executable"] = record.executable
    for name in COREDUMP_DIMENSIONS:
        if record.coredump.get(name):
            attrs[name] = record.coredump[name]
    for name in packages:
        version = record.packages.get(name)
        if version:
            attrs[PACKAGE + name] = version
    return attrs


def varying_packages(records: Iterable[CoreRecord]) -> frozenset[str]:
    """Packages whose version is not the same in every core that has packages: the only ones a
    breakdown or a correlation can say something about."""
    versions: dict[str, set[str]] = {}
    having = 0
    present: Counter = Counter()
    for r in records:
        if not r.packages:
            continue
        having += 1
        for name, version in r.packages.items():
            versions.setdefault(name, set()).add(version)
            present[name] += 1
    return frozenset(n for n, vs in versions.items() if len(vs) > 1 or present[n] < having)


@dataclass
class BatchCounts:
    """How many of the batch's analyzed cores have each attribute."""

    total: int
    counts: Counter
    packages: frozenset[str]

    @classmethod
    def of(cls, records: list[CoreRecord]) -> BatchCounts:
        packages = varying_packages(records)
        counts: Counter = Counter()
        for r in records:
            counts.update(attributes(r, packages).items())
        return cls(total=len(records), counts=counts, packages=packages)


def _values(counter: Counter) -> list[dict[str, Any]]:
    ordered = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"value": v, "count": n} for v, n in ordered[:MAX_VALUES]]


def group_breakdown(members: list[CoreRecord], batch: BatchCounts) -> tuple[dict[str, list], dict[str, list], Counter]:
    """(breakdown by the fixed dimensions, breakdown by varying packages, the group's attribute counts)."""
    counts: Counter = Counter()
    for r in members:
        counts.update(attributes(r, batch.packages).items())
    by_dimension: dict[str, Counter] = {}
    for (dimension, value), n in counts.items():
        by_dimension.setdefault(dimension, Counter())[value] = n
    fixed = {d: _values(by_dimension[d]) for d in DIMENSIONS if d in by_dimension}
    packages = sorted(d for d in by_dimension if d.startswith(PACKAGE))[:MAX_PACKAGES]
    return fixed, {d[len(PACKAGE):]: _values(by_dimension[d]) for d in packages}, counts


def correlations(group_counts: Counter, group_size: int, batch: BatchCounts) -> list[dict[str, Any]]:
    found = []
    for (dimension, value), n in group_counts.items():
        in_batch = batch.counts[(dimension, value)]
        if n < MIN_COUNT or in_batch >= batch.total or not in_batch:
            continue
        group_share, batch_share = n / group_size, in_batch / batch.total
        ratio = group_share / batch_share
        if ratio < MIN_RATIO:
            continue
        found.append({
            "attribute": dimension,
            "value": value,
            "in_group": n,
            "group_size": group_size,
            "group_share": round(group_share, 4),
            "in_batch": in_batch,
            "batch_size": batch.total,
            "batch_share": round(batch_share, 4),
            "ratio": round(ratio, 2),
        })
    # The strongest evidence first: share in the group weighted by how rare it is elsewhere.
    found.sort(key=lambda c: (-(c["group_share"] - c["batch_share"]), -c["ratio"], c["attribute"], c["value"]))
    return found[:MAX_CORRELATIONS]


def correlation_text(c: dict[str, Any]) -> str:
    """"94% of this group (17 of 18) ran driver 535.104 vs 12% of all cores (40 of 333)"."""
    what = c["attribute"][len(PACKAGE):] if c["attribute"].startswith(PACKAGE) else c["attribute"]
    return (
        f"{c['group_share']:.0%} of this group ({c['in_group']} of {c['group_size']}) had {what} {c['value']} "
        f"vs {c['batch_share']:.0%} of all cores ({c['in_batch']} of {c['batch_size']})"
    )
