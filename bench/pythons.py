"""Are cores of CPython 3.14 and 3.15 analyzed within 2x pystack, with and without -dbg packages?

    .venv/bin/python bench/pythons.py [--repeat 5] [--versions 3.14 3.15] [--reference REV]

The same crash (tests/pycrashers/sleeper_thread.py: two Python threads, a native fault) is run
under Debian unstable's CPython 3.13, 3.14 and 3.15 (the tests' root, made by ./setup.sh; one
toolchain and one set of build flags for all three), and each core is analyzed from outside as a
user's would be, twice: with `--sysroot ROOT` (the interpreters' -dbg packages installed there,
so gdb finds their LTO debug info) and with a view of the root without /usr/lib/debug (no -dbg
package). Each (version, root) gets a cache of its own, so that no debug file reaches the second
through the first's cache: cold (empty cache) once, then warm, the median of --repeat runs, wall
and CPU time (gdb's included). pystack reads each core too (the median of --repeat), in the same run.

With --reference REV the same figures are taken for that revision (a `git worktree`, as
bench/run.py makes it) in the same run, the warm runs interleaved round by round so that a change
of the machine's load falls on both alike; the JSON reports of the two are compared (identical
but for timings), which is how a speed change is checked to leave the reports as they were.
Needs root (chroot).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from run import prepare, revision_tree, wait_for_later_work  # noqa: E402  (bench/run.py)
from support.paths import PYCRASHERS  # noqa: E402
from support.sidroot import SidCrashes, sysroot_without_debug_info  # noqa: E402

VERSIONS = ("3.13", "3.14", "3.15")
TARGET = 2.0  # warm, as a multiple of pystack's time
# Fields that differ between two runs of the same analysis.
VOLATILE = ("tool_version", "timings", "elapsed", "generated_at")


def seconds(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall and CPU time (user + system, of the command and the processes it waited for: gdb);
    on a loaded machine the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def stable(report_path: Path) -> dict:
    """A JSON report without what changes from run to run."""
    report = json.loads(report_path.read_text())

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(report)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS))
    parser.add_argument("--reference", metavar="REV", help="an earlier revision measured in the same run (labelled 'before')")
    args = parser.parse_args()
    crashes = SidCrashes()
    work = Path(tempfile.mkdtemp(prefix="coreanalyze-pythons-"))
    roots = {"-dbg": crashes.root, "no -dbg": sysroot_without_debug_info(crashes.root, work)}
    rows = []
    try:
        with ExitStack() as stack:
            trees = {"now": ROOT}
            if args.reference:
                trees = {"before": stack.enter_context(revision_tree(args.reference)), "now": ROOT}
            revisions = [prepare(label, tree, work) for label, tree in trees.items()]
            for version in args.versions:
                case = crashes.crash(f"bench-{version}", f"/usr/bin/python{version}", PYCRASHERS / "sleeper_thread.py")
                libs = crashes.root / "usr" / "lib" / "x86_64-linux-gnu"
                pystack = [sys.executable, "-m", "pystack", "core", str(case.core), str(case.exe), "--lib-search-path", str(libs)]
                theirs = medians([seconds(pystack, dict(os.environ)) for _ in range(args.repeat)])
                for which, root in roots.items():
                    timed = {}
                    for rev in revisions:
                        cache = rev.work / f"cache-{version}-{'dbg' if which == '-dbg' else 'nodbg'}"
                        env = dict(rev.env, COREANALYZE_CACHE_DIR=str(cache))
                        out = rev.work / f"report-{version}-{len(rows)}.json"
                        argv = rev.tool(str(case.core), "--sysroot", str(root), "--format", "json", "-o", str(out))
                        timed[rev.label] = {"env": env, "argv": argv, "out": out, "cache": cache, "cold": seconds(argv, env, rev.work)[0], "warm": []}
                        wait_for_later_work(cache)
                    for _ in range(args.repeat):  # interleaved: each round runs every revision once
                        for rev in revisions:
                            t = timed[rev.label]
                            t["warm"].append(seconds(t["argv"], t["env"], rev.work))
                            wait_for_later_work(t["cache"])
                    same = None
                    if len(revisions) > 1:
                        same = stable(timed["before"]["out"]) == stable(timed["now"]["out"])
                    for label, t in timed.items():
                        rows.append((version, which, label, t["cold"], medians(t["warm"]), theirs, same))
    finally:
        crashes.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'Python':7} {'root':8} {'rev':7} {'cold':>7} {'warm':>7} {'CPU':>6} {'pystack':>8} {'CPU':>6} {'warm/pystack':>13} {'CPU ratio':>9}  {'same report':>11}")
    for version, which, label, cold, (warm, warm_cpu), (theirs, theirs_cpu), same in rows:
        met = "ok" if warm <= TARGET * theirs else f"> {TARGET:g}x"
        verdict = "" if same is None else ("yes" if same else "NO")
        print(
            f"{version:7} {which:8} {label:7} {cold:6.2f}s {warm:6.2f}s {warm_cpu:5.2f}s {theirs:7.2f}s {theirs_cpu:5.2f}s"
            f" {warm / theirs:8.2f}x {met:>4} {warm_cpu / theirs_cpu:8.2f}x  {verdict:>11}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
