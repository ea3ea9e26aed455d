"""The TensorFlow and Python versions a pasted text states, for what the versions decide: whether
a known crash's fix reached this build (coreanalyze.known: "TFSA-2022-155, fixed in 2.10.1; this
process ran 2.10.0"), and a fleet's breakdown by version.

Only explicit forms count, the ones bug templates, pip and the interpreter print:

    ### TensorFlow version            tensorflow==2.9.1           tensorflow-gpu    2.4.0
    2.9.1                             tf.__version__ -> '2.9.1'   .../tensorflow-2.9.1.dist-info/...
    TensorFlow version: 2.10.0        tensorflow_cpu-2.10.0-cp39-cp39-manylinux2014_x86_64.whl
    Python 3.8.10                     Python version: 3.10

A version with one dot is kept as written ("2.9"); a sentence that names no dotted version
("TensorFlow 2 crashes") says nothing.
"""

from __future__ import annotations

import re

# "tensorflow==2.9.1", "tensorflow-cpu 2.10.0" (pip list), "tensorflow-2.9.1.dist-info", a wheel's name.
_TF_PACKAGE = re.compile(
    r"\btensorflow(?:[-_](?:cpu|gpu|intel|macos|aarch64|rocm))?(?:\s*===?\s*|\s+|-(?=\d[\w.]*(?:\.dist-info|-cp\d|-py\d)))"
    r"v?(\d+\.\d+(?:\.\d+)?(?:rc\d+)?)\b(?!\.\d)",
    re.IGNORECASE,
)
# A label and its value on the line ("TensorFlow version: 2.10.0", "tf.__version__ '2.9.1'") or,
# in GitHub's issue forms, alone on the next non-empty line.
_TF_LABEL = re.compile(r"^\W*(?:tensorflow|tf)(?: (?:version|ver\.?)|\.__version__)\b(.*)$", re.IGNORECASE)
_PY_LABEL = re.compile(r"^\W*python(?: version)?\b(.*)$", re.IGNORECASE)
_VERSION = re.compile(r"^\W{0,6}v?(\d+\.\d+(?:\.\d+)?(?:rc\d+)?)\b(?!\.\d)")
_PYTHON_BANNER = re.compile(r"^Python (3\.\d{1,2}(?:\.\d{1,2})?)\b")
# The lines after a label in which its value may stand (an issue form puts a blank line between).
LABEL_REACH = 3
MAX_LINES = 20_000


def stated_versions(lines: list[str]) -> dict[str, str]:
    """{"tensorflow_version": ..., "python_version": ...}, those the text states (the first of each)."""
    found: dict[str, str] = {}
    for i, raw in enumerate(lines[:MAX_LINES]):
        line = raw.strip()
        if not line:
            continue
        if "tensorflow_version" not in found:
            version = _labelled(_TF_LABEL, lines, i, line)
            if version is None and ("ensorflow" in line or "ENSORFLOW" in line) and (m := _TF_PACKAGE.search(line)):
                version = m.group(1)
            if version is not None and version.startswith(("0.", "1.", "2.")):
                found["tensorflow_version"] = version
        if "python_version" not in found:
            m = _PYTHON_BANNER.match(line)
            version = m.group(1) if m else _labelled(_PY_LABEL, lines, i, line)
            if version is not None and version.startswith(("2.", "3.")):
                found["python_version"] = version
        if len(found) == 2:
            break
    return found


def _labelled(label: re.Pattern[str], lines: list[str], i: int, line: str) -> str | None:
    """The version after a label on its line, or alone on one of the next LABEL_REACH lines."""
    m = label.match(line)
    if m is None:
        return None
    rest = m.group(1).strip().lstrip(":=-> ").strip("'\"` ")
    if rest:
        v = _VERSION.match(rest)
        return v.group(1) if v else None
    for following in lines[i + 1 : i + 1 + LABEL_REACH]:
        text = following.strip().strip("'\"`")
        if not text:
            continue
        v = _VERSION.match(text)
        return v.group(1) if v and v.end() >= len(text.rstrip()) - 12 else None
    return None
