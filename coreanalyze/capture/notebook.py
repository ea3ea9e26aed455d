"""`%load_ext coreanalyze` in IPython or a Jupyter kernel: arm the kernel, and tell of the
kernel that died before.

The report goes to $COREANALYZE_GUARD, else ./coreanalyze-reports under the kernel's working
directory. A kernel that dies cannot say so in its notebook; the one Jupyter starts in its place
can: loading the extension there shows every crash of an earlier kernel not shown yet.
"""

from __future__ import annotations

import os
from pathlib import Path

SEEN = ".seen"


def load(ipython) -> None:
    from coreanalyze.capture.guard import DEFAULT_OUT, ENV, arm

    out = Path(os.environ.get(ENV) or DEFAULT_OUT).absolute()
    for crash in unseen_crashes(out):
        print(f"coreanalyze: an earlier kernel died: {crash.verdict}\n    report: {crash.report}")
    if arm(out, by="notebook"):
        print(f"coreanalyze: this kernel is watched; a crash's report goes to {out}")


def unseen_crashes(out: Path):
    """The notebook crashes in `out` not yet shown, each marked shown as it is returned."""
    from coreanalyze.capture.summary import crashes_since

    if not out.is_dir():
        return []
    seen_dir = out / SEEN
    fresh = []
    for crash in crashes_since(out, 0):
        if crash.by != "notebook":
            continue
        marker = seen_dir / crash.report.name
        if marker.exists():
            continue
        try:
            seen_dir.mkdir(exist_ok=True)
            marker.touch()
        except OSError:
            pass
        fresh.append(crash)
    return fresh
