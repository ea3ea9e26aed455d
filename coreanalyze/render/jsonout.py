"""The report as JSON, per the "coreanalyze/1" contract (model.to_jsonable does the shaping)."""

from __future__ import annotations

import json
from typing import Any

from coreanalyze.base.model import Report


def render(report: Report, classification_extra: dict[str, Any] | None = None) -> str:
    """classification_extra: fields written at the end of classification (a batch's `known`)."""
    data = report.to_dict()
    if classification_extra:
        data.setdefault("classification", {}).update(classification_extra)
    # default=str: the environment block may carry values of any type; one odd value must
    # not cost the whole report.
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"
