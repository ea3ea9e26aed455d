"""Score `coreanalyze triage` on the peer projects' crash texts against what those peers state.

    python3 bench/peer_eval.py [CORPUS_DIR] [--show-misses] [--json FILE]

CORPUS_DIR defaults to ../shared/data/external beside the repository (satyr, KDE drkonqi, CASR,
ClusterFuzz test data; sources and licenses in its README). The expectations are
bench/peer_expectations.toml. Printed: files, tracebacks, timeouts, refusals, and
crash function / fault kind / sanitizer class right out of those the peers state.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from coreanalyze.base import tomlfile  # noqa: E402 - after the path
from coreanalyze.base.errors import BadInput  # noqa: E402
from coreanalyze.triage.parse import triage_text  # noqa: E402

EXPECTATIONS = Path(__file__).resolve().parent / "peer_expectations.toml"
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "external"
SKIPPED_NAMES = {"LICENSE", "COPYING", "CC0-1.0.txt", "README.md"}
TIME_LIMIT_S = 20


@dataclass
class Outcome:
    path: str
    status: str  # ok | refused | traceback | timeout
    function: str | None = None
    frame0: str | None = None
    fault_kind: str | None = None
    detail: str | None = None
    message: str = ""


@dataclass
class Score:
    files: int = 0
    tracebacks: int = 0
    timeouts: int = 0
    refused_in_scope: list[str] = field(default_factory=list)
    function_right: int = 0
    function_stated: int = 0
    kind_right: int = 0
    kind_stated: int = 0
    detail_right: int = 0
    detail_stated: int = 0
    frame0_right: int = 0
    frame0_stated: int = 0
    # Of the function / fault-kind expectations, those the peer's own tests (or its own report)
    # state, as opposed to ones this project read from the file where the peer states nothing.
    stated_right: int = 0
    stated: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def function_rate(self) -> float:
        return self.function_right / self.function_stated if self.function_stated else 1.0

    @property
    def kind_rate(self) -> float:
        return self.kind_right / self.kind_stated if self.kind_stated else 1.0

    @property
    def stated_rate(self) -> float:
        return self.stated_right / self.stated if self.stated else 1.0


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout()


def run_one(path: Path, rel: str) -> Outcome:
    text = path.read_text(encoding="utf-8", errors="replace")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT_S)
    try:
        report = triage_text(text, rel)
    except BadInput as e:
        return Outcome(rel, "refused", message=str(e))
    except _Timeout:
        return Outcome(rel, "timeout")
    except Exception as e:  # a traceback is exactly what this bench counts
        return Outcome(rel, "traceback", message=f"{type(e).__name__}: {e}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    c = report.classification
    crashed = report.crashed_thread
    frame0 = crashed.frames[0].function if crashed is not None and crashed.frames else None
    return Outcome(rel, "ok", function=c.culprit.function, frame0=frame0, fault_kind=c.fault_kind, detail=getattr(c, "detail", None))


_ARGS = re.compile(r"\((?:[^()]|\([^()]*\))*\)")


def _plain(name: str) -> str:
    """A function name without return type, arguments, ABI tags and spacing differences."""
    name = name.replace("[abi:cxx11]", "").replace("(anonymous namespace)", "")
    name = re.sub(r"^(?:void|int|bool|unsigned \w+|static) ", "", name.strip())
    previous = None
    while previous != name:
        previous, name = name, _ARGS.sub("", name)
    return re.sub(r"\s+", "", name).removesuffix("const")


def _no_templates(name: str) -> str:
    previous = None
    while previous != name:
        previous, name = name, re.sub(r"<[^<>]*>", "", name)
    return name


def function_matches(actual: str | None, expected: str) -> bool:
    if not actual:
        return False
    a, e = _plain(actual), _plain(expected)
    if a == e or _no_templates(a) == _no_templates(e):
        return True
    # Peers cut long states (ClusterFuzz at 80 characters): a stated prefix of a longer name.
    return a.startswith(e) and (len(e) >= 12 or "<" in a)


# (score key, label, the outcome's value, does it match the expectation); the TOML names the
# fault kind "fault_kind".
_CHECKS = (
    ("function", "function", lambda o: o.function, function_matches),
    ("frame0", "crash thread's frame #0", lambda o: o.frame0, function_matches),
    ("kind", "fault kind", lambda o: o.fault_kind, lambda a, e: a == e),
    ("detail", "detail", lambda o: o.detail, lambda a, e: a and e.lower() in a.lower()),
)
_TOML_KEY = {"function": "function", "frame0": "frame0", "kind": "fault_kind", "detail": "detail"}


def score(corpus: Path, expectations: dict) -> tuple[Score, list[Outcome]]:
    s = Score()
    outcomes = []
    files = sorted(p for p in corpus.rglob("*") if p.is_file() and p.name not in SKIPPED_NAMES)
    for path in files:
        rel = path.relative_to(corpus).as_posix()
        expected = expectations.get(rel, {})
        o = run_one(path, rel)
        outcomes.append(o)
        s.files += 1
        if o.status == "traceback":
            s.tracebacks += 1
            s.misses.append(f"{rel}: traceback {o.message}")
            continue
        if o.status == "timeout":
            s.timeouts += 1
            s.misses.append(f"{rel}: timeout")
            continue
        out_of_scope = expected.get("scope") == "out"
        if o.status == "refused":
            if not out_of_scope:
                s.refused_in_scope.append(rel)
            if out_of_scope:
                continue
        if out_of_scope:
            continue
        derived = set(expected.get("derived", ()))
        for key, label, actual, matches in _CHECKS:
            stated = expected.get(_TOML_KEY[key])
            if stated is None:
                continue
            right = bool(matches(actual(o), stated))
            setattr(s, f"{key}_stated", getattr(s, f"{key}_stated") + 1)
            setattr(s, f"{key}_right", getattr(s, f"{key}_right") + right)
            if key in ("function", "kind"):
                _count_stated(s, _TOML_KEY[key] not in derived, right)
            if not right:
                who = "read from the file (the peer states none):" if _TOML_KEY[key] in derived else "peer states"
                s.misses.append(f"{rel}: {label} {actual(o)!r}, {who} {stated!r}")
    return s, outcomes


def _count_stated(s: Score, stated: bool, right: bool) -> None:
    if stated:
        s.stated += 1
        s.stated_right += right


def load_expectations(path: Path = EXPECTATIONS) -> dict:
    with path.open("rb") as f:
        return tomlfile.load(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--show-misses", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"peer_eval: no corpus at {args.corpus}", file=sys.stderr)
        return 2
    s, outcomes = score(args.corpus, load_expectations())
    print(f"files: {s.files}, tracebacks: {s.tracebacks}, timeouts: {s.timeouts}, "
          f"refused in scope: {len(s.refused_in_scope)}")
    print(f"crash function right: {s.function_right}/{s.function_stated} ({100 * s.function_rate:.0f}%)")
    print(f"fault kind right:     {s.kind_right}/{s.kind_stated} ({100 * s.kind_rate:.0f}%)")
    print(f"sanitizer/exception class as detail: {s.detail_right}/{s.detail_stated}")
    print(f"crash thread's frame #0:             {s.frame0_right}/{s.frame0_stated}")
    print(f"function and fault kind the peers' tests state (no reading of ours): "
          f"{s.stated_right}/{s.stated} ({100 * s.stated_rate:.0f}%)")
    if args.show_misses:
        for line in [*s.misses, *(f"{r}: refused" for r in s.refused_in_scope)]:
            print("  " + line)
    if args.json:
        args.json.write_text(json.dumps({"score": asdict(s), "outcomes": [asdict(o) for o in outcomes]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
