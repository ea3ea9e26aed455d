"""CPython's structure layouts, version by version, loaded from the data files in layouts/.

The tables are data beside the walker, not code (each file's "about" says what it holds):

- offsets.json: the byte offsets of every field the walk reads, one column per build (3.10 to
  3.15, default and free-threaded);
- shapes.json: how each version is shaped beyond offsets (its frame chain, its GIL, ...);
- dwarf.json: where each field lives in the interpreter's DWARF types, by the version from which
  it lives there;
- debug_offsets.json: the field order of _Py_DebugOffsets (3.13+) and the fields the walk reads.

JSON, not the TOML the tool's rules are kept in: these files are also read inside gdb, by gdb's
own Python, which may be older than tomllib (3.11) and has none of the tool's packages.
"""

from __future__ import annotations

import json
import os

LAYOUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layouts")


class LayoutDataError(ValueError):
    """A layouts/ file that does not hold what the walker reads from it."""


def _load(name: str) -> dict:
    with open(os.path.join(LAYOUTS, name), encoding="utf-8") as f:
        return json.load(f)


def _version(text: str) -> tuple[int, int]:
    """(3, 13) of "3.13"."""
    major, minor = text.split(".")
    return int(major), int(minor)


def _build(text: str) -> tuple[int, int, bool]:
    """(3, 13, True) of "3.13t": a version and whether it is the free-threaded build."""
    return (*_version(text.rstrip("t")), text.endswith("t"))


def _offsets_by_build(data: dict) -> dict[tuple[int, int, bool], dict[str, int]]:
    """offsets.json as one dict of offsets per (major, minor, free-threaded) build; a null cell
    is a field the build does not have."""
    builds = [_build(b) for b in data["builds"]]
    tables: dict[tuple[int, int, bool], dict[str, int]] = {build: {} for build in builds}
    for key, row in data["offsets"].items():
        if len(row) != len(builds):
            # A row one cell short would give every later build its neighbour's offset.
            raise LayoutDataError(f"offsets.json: {key} has {len(row)} offsets for {len(builds)} builds")
        for build, offset in zip(builds, row):
            if offset is not None:
                tables[build][key] = offset
    return tables


def _dwarf_by_version(fields: dict, versions: list[tuple[int, int]]) -> dict[tuple[int, int], dict[str, tuple[str, str | None]]]:
    """dwarf.json's fields as one spec per version: each field where the newest version named
    up to that version puts it (null: nowhere)."""
    specs: dict[tuple[int, int], dict[str, tuple[str, str | None]]] = {v: {} for v in versions}
    for key, places in fields.items():
        since = sorted((_version(v), place) for v, place in places.items())
        for version in versions:
            place = None
            for start, where in since:
                if start <= version:
                    place = where
            if place is not None:
                type_name, path = place
                specs[version][key] = (type_name, path)
    return specs


def _field_order(sections: dict) -> tuple[str, ...]:
    """A version's _Py_DebugOffsets members as "section.field" names, in declaration order (a
    member outside any section by its own name)."""
    fields: list[str] = []
    for section, names in sections.items():
        fields += [section] if names is None else [f"{section}.{name}" for name in names]
    return tuple(fields)


_offsets = _offsets_by_build(_load("offsets.json"))
_debug_offsets = _load("debug_offsets.json")
_dwarf = _load("dwarf.json")

# How each version is shaped beyond offsets; the versions the walker reads.
SHAPES: dict[tuple[int, int], dict[str, str]] = {_version(v): shape for v, shape in _load("shapes.json")["versions"].items()}
# The layout of each version's default build (what a process without _Py_DebugOffsets is read with).
TABLES: dict[tuple[int, int], dict[str, int]] = {(major, minor): table for (major, minor, free), table in _offsets.items() if not free}
# _Py_DebugOffsets' field order (3.13+), and the fields the walk reads by the layout key each fills.
DEBUG_OFFSETS_FIELDS: dict[tuple[int, int], tuple[str, ...]] = {
    _version(v): _field_order(sections) for v, sections in _debug_offsets["fields"].items()
}
DEBUG_OFFSET_KEYS: dict[str, str] = _debug_offsets["read"]
# Each offset the block gives must lie inside the structure whose size it also gives.
DEBUG_OFFSET_SIZES: dict[str, str] = _debug_offsets["sizes"]
# Every build of the versions that describe themselves in _Py_DebugOffsets (3.13 and later):
# what fills in what the block does not export, and stands in for a damaged block.
BUILD_TABLES: dict[tuple[int, int, bool], dict[str, int]] = {
    build: table for build, table in _offsets.items() if build[:2] >= min(DEBUG_OFFSETS_FIELDS)
}
DWARF_SPEC = _dwarf_by_version(_dwarf["fields"], sorted(SHAPES))
DWARF_SPEC_FREE_THREADED: dict[str, tuple[str, str | None]] = {
    key: (type_name, path) for key, (type_name, path) in _dwarf["free_threaded_only"].items()
}


def dwarf_spec(version: tuple[int, int], free_threaded: bool) -> dict[str, tuple[str, str | None]]:
    """Where each key lives in the DWARF types of this build (default or free-threaded)."""
    spec = DWARF_SPEC.get(version, {})
    return {**spec, **DWARF_SPEC_FREE_THREADED} if spec and free_threaded else spec
