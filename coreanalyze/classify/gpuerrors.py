"""What a GPU error text means (gpu_errors.toml): the CUDA error it names, the out-of-memory
facts an allocator's message gives, and the meaning of an NVIDIA Xid number.

Texts come from anywhere: every pattern is searched in a bounded prefix of the text.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.base.model import OomInfo
from coreanalyze.rulesdata.kinds import GPU_ERRORS

DATA_FILE = Path(__file__).with_name("gpu_errors.toml")
MAX_TEXT = 4000  # characters of a message searched: the error names sit in its first line or two

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE = re.compile(r"([\d.]{1,20})\s?([KMGTP]?)i?[Bb]?")


@dataclass(frozen=True)
class GpuError:
    exception: str  # canonical name ("Illegal Address")
    fault_kind: str  # "gpu-exception" | "out-of-memory" | ""
    patterns: tuple[re.Pattern[str], ...]
    matched: str = ""  # the text the pattern matched (the error's own spelling), or the label
    label: str = ""  # the name to show when the text matched is not one


@dataclass(frozen=True)
class OomPattern:
    allocator: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class Xid:
    number: int
    meaning: str
    cause: str


@dataclass(frozen=True)
class GpuErrorData:
    errors: tuple[GpuError, ...]
    oom: tuple[OomPattern, ...]
    xids: dict[int, Xid]
    dtype_sizes: dict[str, int]


@functools.cache
def data() -> GpuErrorData:
    raw = rulesdata.shipped(DATA_FILE, GPU_ERRORS)
    errors = tuple(
        GpuError(e["exception"], e["fault_kind"], tuple(re.compile(p) for p in e["patterns"]), label=e.get("label", ""))
        for e in raw["error"]
    )
    oom = tuple(OomPattern(o["allocator"], re.compile(o["pattern"])) for o in raw["oom"])
    xids = {x["number"]: Xid(x["number"], x["meaning"], x["cause"]) for x in raw["xid"]}
    return GpuErrorData(errors, oom, xids, dict(raw["dtype_sizes"]))


def match_error(text: str | None) -> GpuError | None:
    """The first CUDA error (table order) the text names, with its spelling in the text."""
    if not text:
        return None
    text = text[:MAX_TEXT]
    for error in data().errors:
        if error.label and text == error.label:
            return error
        for p in error.patterns:
            m = p.search(text)
            if m:
                # A CHECK's "(700 vs. 0)" is the error's number, not its name: the name is said.
                said = m.group(0) if " vs. " not in m.group(0) else f"{error.exception} (CUDA error {m.group(0).split('(')[1].split()[0]})"
                return GpuError(error.exception, error.fault_kind, error.patterns, error.label or said, error.label)
    return None


def canonical_exception(text: str | None) -> str | None:
    """'cudaErrorIllegalAddress', 'Warp Illegal Address' -> 'Illegal Address' (None if unknown)."""
    error = match_error(text)
    return error.exception if error is not None else None


def parse_size(text: str | None) -> int | None:
    """'1.00GiB' -> 1073741824, '20.00 MiB' -> 20971520, '17179869184' -> 17179869184."""
    if not text:
        return None
    if text.startswith("0x"):
        return int(text, 16) if len(text) <= 18 else None
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    try:
        value = float(m.group(1))
    except ValueError:
        return None
    # Allocator logs mean binary units with or without the "i" ("4.00G", "1.2KB", "20.00 MiB").
    return int(value * _UNITS[m.group(2)])


def oom_from_text(text: str | None) -> OomInfo | None:
    """The allocation that failed, from an allocator's message (first matching [[oom]] pattern)."""
    if not text:
        return None
    text = text[:MAX_TEXT]
    for o in data().oom:
        m = o.pattern.search(text)
        if m:
            return _oom_info(o, m)
    return None


def _oom_info(o: OomPattern, m: re.Match[str]) -> OomInfo:
    groups = m.groupdict()
    name = groups.get("name")
    allocator = o.allocator.replace("{name}", name) if name else o.allocator.replace(" ({name})", "")
    requested = int(groups["rounded"]) if groups.get("rounded") else parse_size(groups.get("requested"))
    if requested is None and groups.get("shape") is not None:
        requested = tensor_bytes(groups["shape"], groups.get("dtype"))
    return OomInfo(
        allocator=allocator,
        requested=requested,
        in_use=parse_size(groups.get("in_use")),
        limit=parse_size(groups.get("limit")),
    )


def tensor_bytes(shape: str, dtype: str | None) -> int | None:
    """'256,1024,1024' of 'float' -> 1073741824; None for a type the table does not know."""
    size = data().dtype_sizes.get(dtype or "")
    if size is None:
        return None
    dims = [int(d) for d in shape.split(",") if d.strip().isdigit()][:32]
    return math.prod(dims) * size


def xid(number: int) -> Xid | None:
    return data().xids.get(number)
