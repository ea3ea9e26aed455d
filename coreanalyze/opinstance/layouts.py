"""Layout data of the framework objects an op instance is read from, one TOML file per version.

Each file in layouts/ names the framework, the versions it was measured on (major.minor) and
the byte offsets inside the objects (see layouts/probe.cc, which measures them from the
framework's own headers). Nothing here guesses an offset: a version without a file gets the
layouts of the other versions tried in turn, and the reader accepts only what validates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import DTYPES, OP_LAYOUT, TFLITE_OPS

LAYOUT_DIR = Path(__file__).resolve().parent / "layouts"
DTYPES_FILE = Path(__file__).resolve().parent / "dtypes.toml"
TFLITE_OPS_FILE = Path(__file__).resolve().parent / "tflite_ops.toml"


@dataclass(frozen=True)
class Layout:
    name: str  # the file's stem, e.g. "tensorflow-2.21"
    framework: str
    versions: tuple[str, ...]
    fields: dict[str, Any]  # [layout] as written
    tables: dict[str, Any] = field(default_factory=dict)  # the file's other tables (enums)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def offset(self, group: str, name: str) -> int:
        return int(self.fields[group][name])


@dataclass(frozen=True)
class DType:
    number: int
    name: str
    size: int  # 0: no fixed-size element
    struct: str | None = None


@lru_cache(maxsize=1)
def all_layouts() -> tuple[Layout, ...]:
    found = []
    for path in sorted(LAYOUT_DIR.glob("*.toml")):
        data = rulesdata.shipped(path, OP_LAYOUT)
        found.append(
            Layout(
                name=path.stem,
                framework=str(data["framework"]),
                versions=tuple(str(v) for v in data.get("versions", ())),
                fields=dict(data["layout"]),
                tables={k: v for k, v in data.items() if isinstance(v, dict) and k != "layout"},
            )
        )
    return tuple(found)


def major_minor(version: str | None) -> str | None:
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def layouts_for(framework: str, version: str | None) -> list[Layout]:
    """The layouts to try, the one measured on this version first (or alone, when there is one)."""
    mine = [lay for lay in all_layouts() if lay.framework == framework]
    wanted = major_minor(version)
    exact = [lay for lay in mine if wanted in lay.versions]
    if exact:
        return exact
    return mine


@lru_cache(maxsize=1)
def tflite_builtin_ops() -> dict[int, str]:
    data = rulesdata.shipped(TFLITE_OPS_FILE, TFLITE_OPS)
    return {int(code): str(name) for code, name in data["builtin_ops"].items()}


@lru_cache(maxsize=1)
def dtypes() -> dict[int, DType]:
    data = rulesdata.shipped(DTYPES_FILE, DTYPES)
    return {
        int(number): DType(int(number), str(entry["name"]), int(entry["size"]), entry.get("struct"))
        for number, entry in data.items()
    }
