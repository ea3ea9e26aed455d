"""When a batch's cores crashed: per group the counts per day (UTC), the batch's whole period,
and the bins of a group's trend chart over that period.

Each core's time is the best its file tells (inputs.CoreInput.timestamp): systemd-coredump's
timestamp attribute, else the microseconds in systemd's file name, else the file's mtime (which
the kernel sets when it writes the core; a copy that did not keep it moves the crash to the copy's
time). An ELF core's own notes carry no wall-clock time, so nothing better is in the core.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta, timezone
from typing import Any, Iterable

MAX_BINS = 60  # bars of a trend chart: a day each, or several days each over a long period
# Times before 2000 or far in the future are a broken clock or a damaged record, not a crash day.
EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc).timestamp()
LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc).timestamp()


def day_of(epoch: float | None) -> str | None:
    if epoch is None or not EARLIEST <= epoch < LATEST:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).date().isoformat()


def per_day(timestamps: Iterable[float | None]) -> dict[str, int]:
    counts = Counter(d for d in map(day_of, timestamps) if d)
    return dict(sorted(counts.items()))


def period(days: Iterable[str]) -> dict[str, Any] | None:
    """The batch's first and last crash day and the number of days between, both included."""
    found = sorted(set(days))
    if not found:
        return None
    first, last = date.fromisoformat(found[0]), date.fromisoformat(found[-1])
    return {"first_day": found[0], "last_day": found[-1], "days": (last - first).days + 1}


def trend_bins(counts: dict[str, int], span: dict[str, Any] | None) -> dict[str, Any] | None:
    """The group's counts over the batch's period in at most MAX_BINS bars of equal width."""
    if not span or not counts:
        return None
    first = date.fromisoformat(span["first_day"])
    width = -(-span["days"] // MAX_BINS)  # days per bar, rounded up
    bins = [0] * (-(-span["days"] // width))
    for day, n in counts.items():
        index = (date.fromisoformat(day) - first).days // width
        if 0 <= index < len(bins):
            bins[index] += n
    return {"days_per_bin": width, "bins": bins, "max": max(bins), "first_day": span["first_day"], "last_day": span["last_day"]}


def bin_label(span_first: str, index: int, width: int) -> str:
    start = date.fromisoformat(span_first) + timedelta(days=index * width)
    if width == 1:
        return start.isoformat()
    return f"{start.isoformat()} – {(start + timedelta(days=width - 1)).isoformat()}"
