"""What the batch index shows beyond summary.json: per group its trend chart (an SVG path),
its rank under each sort order, and the filter classes; per filter its choices and CSS rules.

The index runs no script (its Content-Security-Policy forbids them, like a report's): sorting and
filtering are CSS. Each sort order is a rank in a custom property of the row, which a `:has()`
rule on the chosen <option> turns into the flex `order`; each filter choice hides the rows
without its class. A <select> is operated with the keyboard (Tab, arrows, typing a value's first
letters), and nothing needs a server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from markupsafe import Markup

from coreanalyze.batch.timeline import bin_label

WEB_LINK = re.compile(r"^https?://[^\s<>\"']+$")
CHART_WIDTH = 120
CHART_HEIGHT = 28
MAX_CHOICES = 60  # per filter: the most frequent values
SORTS = (  # (id, label, key: smaller first)
    ("count", "most cores", None),
    ("last", "last seen, newest first", lambda g: _negated_time(g["last_seen"])),
    ("first", "first seen, newest first", lambda g: _negated_time(g["first_seen"])),
    ("growth", "new cores since the previous batch", lambda g: -((g.get("trend") or {}).get("this_period") or 0)),
    ("name", "signature A–Z", lambda g: g["signature"]),
)


def _negated_time(iso: str | None) -> tuple[int, str]:
    return (1, "") if not iso else (0, "".join(chr(0x10FFFF - ord(c)) for c in iso))


def _states(g: dict[str, Any]) -> list[str]:
    trend = (g.get("trend") or {}).get("state")
    return ([trend] if trend else []) + ["known" if g.get("known") else "not known"]


def _values(dimension: str) -> Callable[[dict[str, Any]], list[str]]:
    return lambda g: [v["value"] for v in g["versions"].get(dimension, [])]


FILTERS: tuple[tuple[str, str, Callable[[dict[str, Any]], list[str]]], ...] = (
    ("state", "State", _states),
    ("kind", "Fault", lambda g: [g["fault_kind"]]),
    ("category", "Category", lambda g: [g["category"]]),
    ("host", "Host", lambda g: [h["host"] for h in g["hosts"]]),
    ("tensorflow", "TensorFlow", _values("tensorflow")),
    ("python", "Python", _values("python")),
    ("driver", "Driver", _values("driver")),
    ("executable", "Executable", _values("executable")),
    ("unit", "Unit", _values("unit")),  # systemd-coredump's record (`watch`)
    ("container", "Container", _values("container")),
)


@dataclass
class Filter:
    id: str
    label: str
    choices: list[tuple[str, str, int]] = field(default_factory=list)  # (value, class, groups)


@dataclass
class IndexView:
    rows: list[dict[str, Any]]
    filters: list[Filter]
    sorts: list[tuple[str, str]]
    css: Markup  # rules built from our own ids only: never a value from a core


def chart(trend: dict[str, Any] | None) -> dict[str, Any] | None:
    """One SVG path of bars: a bar per bin, its height relative to the group's busiest bin."""
    if not trend or not trend["max"]:
        return None
    bins, width = trend["bins"], CHART_WIDTH / len(trend["bins"])
    parts = []
    for i, n in enumerate(bins):
        if n:
            h = max(1.5, n / trend["max"] * CHART_HEIGHT)
            parts.append(f"M{i * width:.1f} {CHART_HEIGHT}V{CHART_HEIGHT - h:.1f}h{max(width - 0.6, 0.8):.1f}V{CHART_HEIGHT}Z")
    busiest = max(range(len(bins)), key=lambda i: bins[i])
    unit = "day" if trend["days_per_bin"] == 1 else f"{trend['days_per_bin']} days"
    title = (
        f"cores per {unit}, {trend['first_day']} to {trend['last_day']}; "
        f"at most {trend['max']} ({bin_label(trend['first_day'], busiest, trend['days_per_bin'])})"
    )
    return {"path": "".join(parts), "width": CHART_WIDTH, "height": CHART_HEIGHT, "title": title}


def web_link(known: dict[str, Any] | None) -> str | None:
    """A known crash's URL when it is a web address: a file from elsewhere must not put a
    javascript: or file: link in the page."""
    url = (known or {}).get("url")
    return url if isinstance(url, str) and WEB_LINK.match(url) else None


def index_view(summary: dict[str, Any]) -> IndexView:
    groups = summary["groups"]
    ranks: dict[str, list[int]] = {}
    for sort_id, _, key in SORTS:
        order = list(range(len(groups))) if key is None else sorted(range(len(groups)), key=lambda i: (key(groups[i]), i))
        rank = [0] * len(groups)
        for position, i in enumerate(order):
            rank[i] = position
        ranks[sort_id] = rank
    filters, classes = [], [[] for _ in groups]
    rules = []
    for f_index, (f_id, label, values_of) in enumerate(FILTERS):
        counts: dict[str, int] = {}
        for g in groups:
            for value in dict.fromkeys(values_of(g)):
                counts[value] = counts.get(value, 0) + 1
        if len(counts) < 2 and f_id not in ("state", "kind"):
            continue  # one value for all: nothing to choose
        chosen = sorted(counts, key=lambda v: (-counts[v], v))[:MAX_CHOICES]
        flt = Filter(id=f"filter-{f_id}", label=label)
        cls_of = {}
        for v_index, value in enumerate(sorted(chosen)):
            cls = f"f{f_index}v{v_index}"
            cls_of[value] = cls
            flt.choices.append((value, cls, counts[value]))
            rules.append(f'body:has(#{flt.id} option[value="{cls}"]:checked) .g:not(.{cls}){{display:none}}')
        for i, g in enumerate(groups):
            classes[i].extend(cls_of[v] for v in dict.fromkeys(values_of(g)) if v in cls_of)
        filters.append(flt)
    for sort_id, _, _ in SORTS[1:]:
        rules.append(f'body:has(#sort option[value="{sort_id}"]:checked) .g{{order:var(--{sort_id})}}')
    rows = []
    for i, g in enumerate(groups):
        style = ";".join(f"--{sort_id}:{ranks[sort_id][i]}" for sort_id, _, _ in SORTS[1:])
        rows.append({"g": g, "classes": " ".join(classes[i]), "style": style, "chart": chart(g.get("chart")), "known_url": web_link(g.get("known"))})
    # Growth means something only against a previous batch (--since).
    sorts = [(s, label) for s, label, _ in SORTS if s != "growth" or summary.get("since")]
    return IndexView(rows=rows, filters=filters, sorts=sorts, css=Markup("\n".join(rules)))
