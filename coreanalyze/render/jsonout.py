"""The report as JSON, per the "coreanalyze/1" contract (model.to_jsonable does the shaping)."""

from __future__ import annotations

import json

from ..model import Report


def render(report: Report) -> str:
    # default=str: the environment block may carry values of any type; one odd value must
    # not cost the whole report.
    return json.dumps(report.to_dict(), indent=2, sort_keys=False, default=str) + "\n"
