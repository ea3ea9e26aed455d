"""Score `coreanalyze triage` on a blind set of crash texts from public trackers.

    python3 bench/blind_eval.py [SET.toml] [--show] [--half tune|held-out]

SET defaults to tests/data/blind/issue25.toml: `[[report]]` entries with `source`, `category`,
`fault_kind` and `text`, labelled from what each thread established before the tool ran.
Printed: category right, fault kind right and refused, out of the reports; with --show, every
report the tool got wrong or refused, with what it said.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coreanalyze.base import tomlfile  # noqa: E402 - after the path
from coreanalyze.base.errors import BadInput  # noqa: E402
from coreanalyze.triage.parse import triage_text  # noqa: E402

DEFAULT_SET = REPO / "tests" / "data" / "blind" / "issue25.toml"


def _half(source: str) -> str:
    """As tests/support/blindsets.half: even SHA-256 of the source URL is the half to tune on."""
    return "tune" if int(hashlib.sha256(source.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", nargs="?", type=Path, default=DEFAULT_SET)
    parser.add_argument("--show", action="store_true", help="print the misses")
    parser.add_argument("--half", choices=("tune", "held-out"), help="only one half of a split set (by the SHA-256 of the source)")
    args = parser.parse_args(argv)
    reports = tomlfile.loads(args.set.read_text(encoding="utf-8"))["report"]
    if args.half:
        reports = [r for r in reports if _half(r["source"]) == args.half]
    category = kind = refused = 0
    for r in reports:
        try:
            got = triage_text(r["text"], r["source"]).classification
        except BadInput as e:
            refused += 1
            if args.show:
                print(f"REFUSED  {r['source']}: {e}")
            continue
        category += got.category == r["category"]
        kind += got.fault_kind == r["fault_kind"]
        if args.show and (got.category, got.fault_kind) != (r["category"], r["fault_kind"]):
            print(f"MISS     {r['source']}: want {r['category']}/{r['fault_kind']}, "
                  f"got {got.category}/{got.fault_kind}")
    n = len(reports)
    print(f"{n} reports: category {category}/{n} ({100 * category / n:.0f}%), "
          f"fault kind {kind}/{n} ({100 * kind / n:.0f}%), refused {refused}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
