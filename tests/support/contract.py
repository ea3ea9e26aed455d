"""Every JSON report the tests see is checked against the shipped JSON Schema
(coreanalyze/schema/report.schema.json): the CLI's output (support.clirun), the reports a batch
writes, and the JSON the renderer makes in-process (tests/conftest.py). A report that does not fit
fails the test that made it, with the path of the field and what the schema says."""

from __future__ import annotations

import json
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

import jsonschema

from coreanalyze.base.model import SCHEMA
from coreanalyze.schema import report_schema


@lru_cache(maxsize=1)
def validator() -> jsonschema.Draft202012Validator:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def problems(document: Any) -> list[str]:
    found = []
    for error in validator().iter_errors(document):
        while error.context:  # "not valid under any of the given schemas": the option that got furthest
            error = max(error.context, key=lambda e: len(e.absolute_path))
        found.append(f"{error.json_path}: {error.message[:300]}")
    return sorted(found)


def check_report(document: Any, where: str = "report") -> None:
    found = problems(document)
    assert not found, f"{where} does not fit coreanalyze/schema/report.schema.json:\n  " + "\n  ".join(found[:20])


def is_report(document: Any) -> bool:
    return isinstance(document, dict) and document.get("schema") == SCHEMA


_waived: list[str] = []


@contextmanager
def waived(why: str) -> Iterator[None]:
    """Within: JSON reports are not checked. For a test that renders, on purpose, a report no
    stage makes (a renderer's robustness on fields left empty); `why` says so where it is used."""
    _waived.append(why)
    try:
        yield
    finally:
        _waived.pop()


def check_text(text: str, where: str) -> None:
    """A JSON report given as text (a command's stdout, a file)."""
    if _waived:
        return
    try:
        document = json.loads(text)
    except ValueError:
        return  # not JSON: not a report this check is about
    if is_report(document):
        check_report(document, where)


def check_files(paths: Iterable[Path]) -> None:
    for path in paths:
        if path.is_file():
            check_text(path.read_text(encoding="utf-8", errors="replace"), str(path))


def output_files(args: tuple[str, ...], cwd: Path | None) -> list[Path]:
    """The JSON reports a command line wrote: `-o FILE` with JSON asked for (by --format or the
    name), and for `batch` / `merge` every per-core report under --out's reports/."""
    base = cwd or Path.cwd()
    found: list[Path] = []
    words = list(args)
    for flag in ("-o", "--output"):
        if flag in words[:-1]:
            target = words[words.index(flag) + 1]
            json_asked = "--format" in words[:-1] and words[words.index("--format") + 1] == "json"
            if target != "-" and (json_asked or target.endswith(".json")):
                found.append(base / target)
    if words and words[0] in ("batch", "merge") and "--out" in words[:-1]:
        out = base / words[words.index("--out") + 1]
        found.extend(sorted((out / "reports").glob("*.json")))
    return found


# ---------------------------------------------------------------------------------------------
# The schema as an outline, for docs/json-contract.md (tests/unit/test_json_contract.py keeps the
# document's copy equal to it).

OUTLINE_START = "<!-- outline of coreanalyze/schema/report.schema.json: written from the schema, do not edit -->"
OUTLINE_END = "<!-- end of the outline -->"


def outline(schema: dict[str, Any]) -> str:
    """One line per field: its name, its type, `*` when it is in the contract (never renamed),
    and its description; a field's own fields indented under it."""
    rows: list[tuple[str, str, str, str]] = []
    _walk(schema, schema, 0, rows)
    width = max(len(name) for name, *_ in rows) + 2
    type_width = min(max(len(t) for _, t, _, _ in rows), 40) + 2
    lines = []
    for name, kind, contract, description in rows:
        line = f"{name:<{width}}{kind:<{type_width}}{contract:<3}{description}".rstrip()
        lines.append(line)
    return "\n".join(lines)


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = {**root["$defs"][node["$ref"].rsplit("/", 1)[1]], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _type(root: dict[str, Any], node: dict[str, Any]) -> str:
    if "$ref" in node and node["$ref"].endswith("/address"):
        return '"0x…"'
    node = _resolve(root, node)
    if "const" in node:
        return f'"{node["const"]}"'
    if "anyOf" in node:
        return " | ".join(_type(root, option) for option in node["anyOf"])
    if "enum" in node:
        return "|".join("null" if v is None else str(v) for v in node["enum"])
    kinds = node.get("type", "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    words = []
    for kind in kinds:
        if kind == "array":
            words.append(f"[{_type(root, node.get('items', {}))}]")
        elif kind == "object" and "properties" not in node and isinstance(node.get("additionalProperties"), dict):
            words.append(f"{{name: {_type(root, node['additionalProperties'])}}}")
        else:
            words.append(kind)
    return " | ".join(words)


def _fields(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """The named fields under a node: its own, its array items', or its non-null option's."""
    node = _resolve(root, node)
    for option in node.get("anyOf", []):
        found = _fields(root, option)
        if found:
            return found
    if "items" in node:
        return _fields(root, node["items"])
    return node.get("properties", {})


def _walk(root: dict[str, Any], node: dict[str, Any], depth: int, rows: list) -> None:
    for name, field in _fields(root, node).items():
        resolved = _resolve(root, field)
        options = [_resolve(root, o) for o in resolved.get("anyOf", [])]
        description = field.get("description") or resolved.get("description") or next((o["description"] for o in options if "description" in o), "")
        contract = "*" if field.get("x-contract") else ""
        rows.append(("  " * depth + name, _type(root, field), contract, description))
        _walk(root, field, depth + 1, rows)
