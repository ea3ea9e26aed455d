"""The JSON contract of the reports ("coreanalyze/1") as a JSON Schema (draft 2020-12), shipped
with the package: `coreanalyze --schema` prints it. Fields marked `"x-contract": true` are the
ones other tools may rely on and are never renamed; others may be added. The tests check every
JSON report they make against it, and docs/json-contract.md is checked against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).resolve().parent / "report.schema.json"


def schema_text() -> str:
    return SCHEMA_FILE.read_text(encoding="utf-8")


def report_schema() -> dict[str, Any]:
    return json.loads(schema_text())
