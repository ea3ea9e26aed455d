"""`batch --since PREVIOUS_OUT`: what changed since the previous batch.

The previous batch's summary.json is the baseline; the parts that matter are kept in this
batch's OUT/since.json, so that --resume and `merge` give the same answer without the previous
directory. Per group, against the baseline:

    new       its signature was in no group of the previous batch, nor among the groups it had lost
    back      the previous batch had listed it as gone: a regression
    growing   it has at least GROWTH_MIN cores the previous batch did not have, and at least
              GROWTH_RATIO times the cores the group had gained in the previous batch's own period
    steady    seen before, not growing

and every group of the previous batch (or gone in it) without a core now is listed as gone, with
when it was last seen. A core counts as "this period's" when the previous batch did not have it
(by content identity), so a directory the fleet keeps adding to and one emptied every day both work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coreanalyze.base.errors import BadInput

BASELINE_FILE = "since.json"
BASELINE_SCHEMA = "coreanalyze-batch-since/1"
GROWTH_RATIO = 2.0
GROWTH_MIN = 3
MAX_BYTES = 256 << 20


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise BadInput(f"{what}: {path} is larger than {MAX_BYTES >> 20} MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise BadInput(f"{what}: cannot read {path}: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(f"{what}: {path} is not valid JSON: {str(e)[:200]}") from None
    if not isinstance(data, dict):
        raise BadInput(f"{what}: {path} is not a batch summary")
    return data


def _period_count(group: dict[str, Any]) -> int:
    trend = group.get("trend")
    if isinstance(trend, dict) and isinstance(trend.get("this_period"), int):
        return trend["this_period"]
    return group.get("count") if isinstance(group.get("count"), int) else 0


def baseline_from_summary(previous: str | Path) -> dict[str, Any]:
    """The baseline of a previous batch directory; bad input when it is not one."""
    directory = Path(previous)
    summary_path = directory / "summary.json"
    if not summary_path.is_file():
        raise BadInput(f"--since {previous}: no summary.json there (not a batch output directory)")
    summary = _read_json(summary_path, f"--since {previous}")
    if not str(summary.get("schema", "")).startswith("coreanalyze-batch/") or not isinstance(summary.get("groups"), list):
        raise BadInput(f"--since {previous}: summary.json is not a coreanalyze batch summary")
    groups: dict[str, Any] = {}
    for g in summary["groups"]:
        if not isinstance(g, dict) or not isinstance(g.get("signature"), str):
            continue
        cores = [c for c in g.get("cores") or [] if isinstance(c, str)]
        groups[g["signature"]] = {"cores": sorted(cores), "count": len(cores), "period_count": _period_count(g), "last_seen": g.get("last_seen")}
    gone = {}
    for g in summary.get("gone") or []:
        if isinstance(g, dict) and isinstance(g.get("signature"), str) and g["signature"] not in groups:
            gone[g["signature"]] = {"count": g.get("count"), "last_seen": g.get("last_seen")}
    span = summary.get("period") if isinstance(summary.get("period"), dict) else {}
    return {
        "schema": BASELINE_SCHEMA,
        "previous": [{"path": str(directory.resolve()), "last_day": span.get("last_day"), "groups": len(groups)}],
        "groups": groups,
        "gone": gone,
    }


def read_baseline(out: Path) -> dict[str, Any] | None:
    path = out / BASELINE_FILE
    if not path.is_file():
        return None
    data = _read_json(path, str(path))
    if data.get("schema") != BASELINE_SCHEMA:
        raise BadInput(f"{path}: not a baseline of this version")
    return data


def merge_baselines(baselines: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One baseline from those of several batches: the same previous batch counts once; different
    previous batches (other machines') add up, their cores united."""
    distinct: dict[str, dict[str, Any]] = {}
    for b in baselines:
        distinct.setdefault(json.dumps(b, sort_keys=True), b)
    if not distinct:
        return None
    merged: dict[str, Any] = {"schema": BASELINE_SCHEMA, "previous": [], "groups": {}, "gone": {}}
    for b in distinct.values():
        merged["previous"].extend(b.get("previous", []))
        for sig, g in b.get("groups", {}).items():
            into = merged["groups"].setdefault(sig, {"cores": [], "count": 0, "period_count": 0, "last_seen": None})
            into["cores"] = sorted(set(into["cores"]) | set(g.get("cores", [])))
            into["count"] = len(into["cores"])
            into["period_count"] += g.get("period_count") or 0
            into["last_seen"] = max(filter(None, (into["last_seen"], g.get("last_seen"))), default=None)
        for sig, g in b.get("gone", {}).items():
            merged["gone"].setdefault(sig, g)
    merged["previous"].sort(key=lambda p: (str(p.get("path")), str(p.get("last_day"))))
    for sig in merged["groups"]:
        merged["gone"].pop(sig, None)
    return merged


def trend_of(signature: str, cores: list[str], baseline: dict[str, Any]) -> dict[str, Any]:
    before = baseline["groups"].get(signature)
    if before is None:
        state = "back" if signature in baseline["gone"] else "new"
        return {"state": state, "this_period": len(cores), "previous_period": None, "note": _note(state, len(cores), None, baseline["gone"].get(signature))}
    fresh = len(set(cores) - set(before["cores"]))
    previous = before["period_count"]
    growing = fresh >= GROWTH_MIN and fresh >= GROWTH_RATIO * previous
    state = "growing" if growing else "steady"
    return {"state": state, "this_period": fresh, "previous_period": previous, "note": _note(state, fresh, previous, None)}


def _note(state: str, fresh: int, previous: int | None, gone: dict[str, Any] | None) -> str:
    cores = f"{fresh} core{'' if fresh == 1 else 's'}"
    if state == "new":
        return f"new: {cores}, not seen by the previous batch"
    if state == "back":
        last = (gone or {}).get("last_seen")
        return f"back: {cores} of a crash the previous batch had seen go" + (f" (last seen {last})" if last else "")
    ratio = f" (×{fresh / previous:.1f})" if previous else ""
    return f"{state}: {cores} since the previous batch vs {previous} in its own period{ratio}"


def gone_groups(current: set[str], baseline: dict[str, Any]) -> list[dict[str, Any]]:
    """Groups of the baseline (and those it had already lost) without a core in this batch."""
    gone = []
    for sig, g in baseline["groups"].items():
        if sig not in current:
            gone.append({"signature": sig, "count": g.get("count"), "last_seen": g.get("last_seen")})
    for sig, g in baseline["gone"].items():
        if sig not in current and sig not in baseline["groups"]:
            gone.append({"signature": sig, "count": g.get("count"), "last_seen": g.get("last_seen")})
    gone.sort(key=lambda g: (str(g["last_seen"] or ""), g["signature"]), reverse=True)
    return gone


def thresholds() -> dict[str, Any]:
    return {"growth_ratio": GROWTH_RATIO, "growth_min": GROWTH_MIN}
