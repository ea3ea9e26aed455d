"""The GPU core dump's table layouts (coredump_layout.toml) as typed data, and the decoding of
one table section's rows from bytes."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import GPU_COREDUMP_LAYOUT

LAYOUT_FILE = Path(__file__).resolve().parent / "coredump_layout.toml"
SHT_LOUSER = 0x80000000
_TYPES = {"u32": "<I", "u64": "<Q"}


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    format: str  # struct format of this one field

    @property
    def end(self) -> int:
        return self.offset + struct.calcsize(self.format)


@dataclass(frozen=True)
class TableLayout:
    name: str
    fields: tuple[Field, ...]
    required: int  # a row shorter than the first `required` fields is not this table's

    @property
    def min_size(self) -> int:
        return self.fields[self.required - 1].end

    def decode(self, row: bytes) -> dict[str, int]:
        """The fields that fit in this row (an older driver's shorter row lacks the later ones)."""
        return {f.name: struct.unpack_from(f.format, row, f.offset)[0] for f in self.fields if f.end <= len(row)}


@dataclass(frozen=True)
class Layout:
    section_types: dict[str, int]  # table name -> sh_type
    tables: dict[str, TableLayout]
    exceptions: dict[int, str]  # CUDBGException_t -> name

    def table_of(self, sh_type: int) -> str | None:
        for name, value in self.section_types.items():
            if value == sh_type:
                return name
        return None

    def exception_name(self, code: int) -> str:
        return self.exceptions.get(code, f"GPU exception {code}")


def _table(name: str, spec: dict) -> TableLayout:
    fields: list[Field] = []
    offset = 0
    for field_name, type_name in spec["fields"]:
        fmt = _TYPES[type_name]
        size = struct.calcsize(fmt)
        offset = (offset + size - 1) // size * size  # C alignment of the field
        fields.append(Field(field_name, offset, fmt))
        offset += size
    return TableLayout(name, tuple(fields), int(spec.get("required", len(fields))))


@lru_cache(maxsize=1)
def load_layout(path: Path = LAYOUT_FILE) -> Layout:
    data = rulesdata.shipped(path, GPU_COREDUMP_LAYOUT)
    return Layout(
        section_types={name: SHT_LOUSER + int(value) for name, value in data["section_types"].items()},
        tables={name: _table(name, spec) for name, spec in data["tables"].items()},
        exceptions={int(code): str(name) for code, name in data["exceptions"].items()},
    )


def decode_rows(table: TableLayout, data: bytes, entry_size: int, max_rows: int) -> list[dict[str, int]]:
    """The rows of a table section. entry_size is the section's sh_entsize (0: the layout's own
    size, one row when the section has no entries size); at most max_rows rows are read."""
    size = entry_size or table.fields[-1].end
    if size < table.min_size:
        return []  # rows too short to be this table's: a layout this reader does not know
    count = min(len(data) // size, max_rows)
    return [table.decode(data[i * size : (i + 1) * size]) for i in range(count)]
