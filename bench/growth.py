#!/usr/bin/env python3
"""A batch that grows: many TensorFlow cores of several crashes and two TensorFlow versions.

    .venv/bin/python bench/growth.py [--cores 100] [--jobs 2] [--scenario-subset all|small]
                                     [--no-older] [--workdir DIR] [--keep] [--json results.json]

1. Makes --cores cores, spread evenly over the chosen crash scenarios of the tests
   (tests/support/tfcores.py) and over two TensorFlow versions: the one of the interpreter
   running this (.venv's) and the older one the tests use (tests/older_tensorflow.txt, in a
   virtual environment made in the work directory as the tests make it). At most two cores are
   made at a time. The cores a kept --workdir holds (and that environment) are used again.
2. Times, once each (wall time, CPU time, peak resident memory of the whole process tree):
   - `coreanalyze batch DIR --out OUT --jobs N` on all the cores, starting with an empty
     cache directory (COREANALYZE_CACHE_DIR); then, once the process the batch leaves behind
     has written its cache entries, the size of that cache; each core's own time as the batch
     recorded it (cores.jsonl), per version, the first quarter's against the last quarter's;
   - `pystack core CORE PY --native-all` on each core, one after the other, with the core's own
     interpreter: total and per core, per TensorFlow version.
3. Prints the figures; with --json writes them too.

The work directory is removed at the end unless --keep (a --workdir's cores are kept for the
next run only with --keep: a hundred cores take ~26 GiB). It stops before making cores that
would leave less than 5 GiB free on that disk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

# bench/run.py's helpers (it also puts tests/ and the project on sys.path, for support.*).
sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402

# Crashes that die the same way on both TensorFlow versions (the older one's op-instance
# tests use these too), without fault injection under gdb (slower, and tied to one build's
# functions). "small": no custom op library to compile, for a quick end-to-end run.
SUBSETS = {
    "all": ("kernel_compute_segv", "allocator_heap_corruption", "kernel_check_failure",
            "graph_check_failure", "worker_thread_segv", "kernel_overwritten"),
    "small": ("kernel_check_failure", "graph_check_failure"),
}  # fmt: skip
MAKE_AT_ONCE = 2  # cores made in parallel: each maker is a TensorFlow process of ~1 GB
CORE_MB = 300  # a TensorFlow core on disk (2.21's ~290 MiB, 2.16's ~236 MiB)
SPARE_GB = 5  # left free on the work directory's disk after the cores


@dataclass(frozen=True)
class Kind:
    """One crash of one TensorFlow version, and how many of its cores the batch gets."""

    version: str
    python: str
    scenario: str
    count: int

    @property
    def label(self) -> str:
        return f"tf{self.version}-{self.scenario}"


# --------------------------------------------------------------------------- environments


def older_python(workdir: Path) -> str:
    """The older TensorFlow's interpreter: the one a kept work directory holds, else a virtual
    environment made there as the tests make theirs (support.tfcores.make_older_python)."""
    import pytest
    from support.tfcores import make_older_python

    kept = workdir / "older-tensorflow" / "venv" / "bin" / "python"
    if kept.exists() and imports_tensorflow(str(kept)):
        return str(kept)
    print(f"making the older TensorFlow's environment in {kept.parent.parent} ...", flush=True)
    try:
        return str(make_older_python(workdir / "older-tensorflow"))
    except (Exception, pytest.skip.Exception, pytest.fail.Exception) as e:  # missing() skips or fails
        sys.exit(f"growth: cannot make the older TensorFlow's environment: {e}")


def imports_tensorflow(python: str) -> bool:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([python, "-c", "import tensorflow"], capture_output=True, env=env).returncode == 0


def pythons(args: argparse.Namespace, workdir: Path) -> dict[str, str]:
    """TensorFlow version -> the interpreter that has it."""
    from support.tfcores import installed_version

    found = [bench.tf_python()]
    if args.older:
        found.append(older_python(workdir))
    return {installed_version(Path(python), "tensorflow-cpu"): python for python in found}


# --------------------------------------------------------------------------- cores


def plan(cores: int, versions: dict[str, str], scenarios: tuple[str, ...]) -> list[Kind]:
    """cores spread over every (version, scenario), the first kinds one more where it does not divide."""
    pairs = [(version, python, scenario) for version, python in versions.items() for scenario in scenarios]
    share, extra = divmod(cores, len(pairs))
    kinds = [Kind(v, p, s, share + (i < extra)) for i, (v, p, s) in enumerate(pairs)]
    return [kind for kind in kinds if kind.count]


def make_all(kinds: list[Kind], workdir: Path) -> dict[Kind, list[Path]]:
    """Each kind's cores (bench/run.py's make_cores, in workdir/cores/tf<version>), at most
    MAKE_AT_ONCE at a time."""
    from support.tfcores import SCENARIOS, build_op_library

    kept = {kind: kept_cores(kind, workdir) for kind in kinds}
    missing = [kind for kind in kinds if kept[kind] is None]
    check_room(workdir, sum(kind.count for kind in missing))
    # Built first, one version at a time: two makers compiling the same library into the same
    # file would race.
    for version, python in {k.version: k.python for k in missing if SCENARIOS[k.scenario].uses_op_library}.items():
        build_op_library(Path(python), version_dir(workdir, version))

    def make(kind: Kind) -> list[Path]:
        return kept[kind] or bench.make_cores(kind.python, kind.count, version_dir(workdir, kind.version), kind.scenario)

    with ThreadPoolExecutor(MAKE_AT_ONCE) as pool:
        return dict(zip(kinds, pool.map(make, kinds)))


def check_room(workdir: Path, cores: int) -> None:
    """Stop before the disk fills: the machine's other work needs its share of it too."""
    needed = cores * CORE_MB * 2**20 + SPARE_GB * 2**30
    free = shutil.disk_usage(workdir).free
    if free < needed:
        sys.exit(f"growth: {cores} cores need ~{needed / 2**30:.0f} GiB free in {workdir} ({SPARE_GB} GiB of it left "
                 f"for the rest of the machine), {free / 2**30:.0f} GiB are: make fewer (--cores)")  # fmt: skip


def kept_cores(kind: Kind, workdir: Path) -> list[Path] | None:
    """A kept work directory's cores of this kind, where it has them all: used as they are,
    without asking TensorFlow for its build flags again (an import of TensorFlow per kind)."""
    found = [bench.kept_core(version_dir(workdir, kind.version) / f"{kind.scenario}-{i}") for i in range(kind.count)]
    return None if None in found else found


def version_dir(workdir: Path, version: str) -> Path:
    return workdir / "cores" / f"tf{version}"


def link_batch(cores: dict[Kind, list[Path]], directory: Path) -> None:
    """The batch's input: one directory of links, the kinds taking turns in name order (the
    order the batch takes them), so that the first and the last cores are alike."""
    directory.mkdir(parents=True)
    longest = max(len(paths) for paths in cores.values())
    turns = [(kind, i) for i in range(longest) for kind in cores if i < len(cores[kind])]
    for n, (kind, i) in enumerate(turns):
        core = cores[kind][i]
        os.symlink(core, directory / f"{n:04d}-{kind.label}-{i}-{core.name}")


# --------------------------------------------------------------------------- runs


def time_batch(rev: bench.Revision, inputs: Path, jobs: int) -> dict:
    """One batch over all the cores from an empty cache; its cache once the work it left is done."""
    out = rev.work / "batch-out"
    argv = rev.tool("batch", str(inputs), "--out", str(out), "--jobs", str(jobs))
    m = bench.measure_once(f"coreanalyze batch --jobs {jobs}", argv, rev.env, cwd=rev.work)
    later = bench.wait_for_later_work(rev.cache)
    return {
        "run": asdict(m),
        "later_work_s": later,
        "cache_mb": bench.disk_usage(rev.cache) / 2**20,
        "cache_info": cache_info(rev),
        "outcome": batch_outcome(out),
    }


def cache_info(rev: bench.Revision) -> str:
    """`coreanalyze cache info`: the cache's size per part, as the tool itself tells it."""
    done = subprocess.run(rev.tool("cache", "info"), env=rev.env, cwd=rev.work, capture_output=True, text=True)
    return done.stdout.strip()


def batch_outcome(out: Path) -> dict:
    """Cores analyzed and failed, crash groups: read from the batch's summary.json."""
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return {}
    totals = summary.get("totals", {})
    return {"totals": totals, "groups": len(summary.get("groups", [])), "per_core": per_core_seconds(out / "cores.jsonl")}


def per_core_seconds(records: Path) -> dict:
    """Each core's own analysis time as the batch recorded it (cores.jsonl, in the order the
    batch finished them), per TensorFlow version, and the first quarter's against the last
    quarter's: whether a core costs more as the batch goes on."""
    try:
        cores = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return {}
    seconds = [c["seconds"] for c in cores if c.get("seconds") is not None]
    if not seconds:
        return {}
    by_version: dict[str, list[float]] = {}
    for c in cores:
        version = (c.get("versions") or {}).get("tensorflow", "?")
        by_version.setdefault(version, []).append(c["seconds"])
    quarter = max(1, len(seconds) // 4)
    return {
        "median_s": statistics.median(seconds),
        "max_s": max(seconds),
        "first_quarter_median_s": statistics.median(seconds[:quarter]),
        "last_quarter_median_s": statistics.median(seconds[-quarter:]),
        "by_version_median_s": {version: statistics.median(found) for version, found in by_version.items()},
    }


def time_pystack(cores: dict[Kind, list[Path]], pystack: str) -> dict[str, dict]:
    """pystack on each core, one after the other, with that core's interpreter: per TensorFlow
    version, and over all the cores."""
    runs: dict[str, list[bench.Measurement]] = {}
    failures: dict[str, str] = {}
    for kind, paths in cores.items():
        for core in paths:
            argv = [pystack, "core", str(core), kind.python, "--native-all"]
            m = bench.measure_once(f"pystack {core.parent.name}", argv)
            runs.setdefault(kind.version, []).append(m)
            if m.exit_code != 0 and kind.version not in failures:
                failures[kind.version] = last_error(argv)
    figures = {version: pystack_figures(found) for version, found in runs.items()}
    figures["all"] = pystack_figures([m for found in runs.values() for m in found])
    for version, error in failures.items():
        figures[version]["error"] = error
    return figures


def pystack_figures(runs: list[bench.Measurement]) -> dict:
    """Totals over the runs; the time per core over the cores pystack read (a failure is quick)."""
    read = [m.wall for m in runs if m.exit_code == 0]
    return {
        "cores": len(runs),
        "failed": len(runs) - len(read),
        "total_s": sum(m.wall for m in runs),
        "per_core_s": sum(read) / len(read) if read else None,
        "median_s": statistics.median(read) if read else None,
        "cpu_total_s": sum(m.cpu for m in runs),
        "peak_tree_mb": max(m.peak_tree_mb for m in runs),
    }


def last_error(argv: list[str]) -> str:
    """The last line a failed run wrote, run again (the timed run's output was not kept)."""
    done = subprocess.run(argv, capture_output=True, text=True)
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit {done.returncode}"


def find_pystack() -> str:
    # pystack comes with the test extra, next to this interpreter when it runs from a venv.
    beside = Path(sys.executable).parent / "pystack"
    return str(beside) if beside.exists() else shutil.which("pystack") or sys.exit("growth: pystack is not installed")


# --------------------------------------------------------------------------- report


def print_figures(results: dict) -> None:
    n, batch, run = results["cores"], results["batch"], results["batch"]["run"]
    outcome, per_core = batch["outcome"], batch["outcome"].get("per_core", {})
    print()
    print(f"{n} cores ({results['core_gib']:.1f} GiB), TensorFlow {', '.join(results['versions'])}, "
          f"{len(results['scenarios'])} crashes; batch totals {outcome.get('totals')}")  # fmt: skip
    print(f"  coreanalyze batch --jobs {results['jobs']}: {run['wall']:.1f} s ({run['wall'] / n:.2f} s per core), "
          f"{run['cpu']:.1f} s CPU ({run['cpu'] / n:.2f} s per core), peak {run['peak_tree_mb']:.0f} MiB tree, "
          f"{run['peak_process_mb']:.0f} MiB largest process, exit {run['exit_code']}")  # fmt: skip
    if per_core:
        versions = ", ".join(f"{v} {s:.2f} s" for v, s in per_core["by_version_median_s"].items())
        print(f"  a core's own time in the batch: median {per_core['median_s']:.2f} s (by TensorFlow: {versions}), "
              f"max {per_core['max_s']:.1f} s; first quarter {per_core['first_quarter_median_s']:.2f} s, "
              f"last quarter {per_core['last_quarter_median_s']:.2f} s")  # fmt: skip
    print(f"  cache at the end: {batch['cache_mb']:.1f} MiB (its later work took {batch['later_work_s']:.1f} s more)")
    for line in batch["cache_info"].splitlines():
        print(f"    {line}")
    pystack = results["pystack"]
    for version, p in pystack.items():
        if version == "all" and len(pystack) == 2:  # one version: its own line says it all
            continue
        per_core = f"{p['per_core_s']:.2f} s per core read (median {p['median_s']:.2f} s)" if p["per_core_s"] else "no core read"
        print(f"  pystack, one core after the other, TensorFlow {version}: {p['total_s']:.1f} s for {p['cores']} cores, {per_core}, "
              f"{p['cpu_total_s']:.1f} s CPU, peak {p['peak_tree_mb']:.0f} MiB, {p['failed']} failed {p.get('error', '')}")  # fmt: skip


def run(args: argparse.Namespace) -> dict:
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="coreanalyze-growth-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # TensorFlow leaves autograph's files in the temporary directory of a process that dies:
    # the work directory's own, removed with it.
    os.environ["TMPDIR"] = str(workdir / "tmp")
    (workdir / "tmp").mkdir(exist_ok=True)
    try:
        return measure_all(args, workdir)
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def measure_all(args: argparse.Namespace, workdir: Path) -> dict:
    pystack = find_pystack()
    versions = pythons(args, workdir)
    kinds = plan(args.cores, versions, SUBSETS[args.scenario_subset])
    print(f"making {args.cores} cores in {workdir}: {', '.join(f'{k.label} x{k.count}' for k in kinds)}", flush=True)
    cores = make_all(kinds, workdir)
    rev = bench.prepare("this", bench.ROOT, workdir)
    link_batch(cores, rev.work / "cores")
    print(f"timing coreanalyze batch --jobs {args.jobs} ...", flush=True)
    batch = time_batch(rev, rev.work / "cores", args.jobs)
    print("timing pystack on each core ...", flush=True)
    results = {
        "date": date.today().isoformat(),
        "machine": bench.machine(),
        "revision": revision(),
        "cores": args.cores,
        "core_gib": sum(p.stat().st_size for paths in cores.values() for p in paths) / 2**30,
        "versions": list(versions),
        "scenarios": list(SUBSETS[args.scenario_subset]),
        "jobs": args.jobs,
        "batch": batch,
        "pystack": time_pystack(cores, pystack),
    }
    print_figures(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return results


def revision() -> str:
    """The commit the figures are of (the tree may hold others' uncommitted work: "-dirty")."""
    done = subprocess.run(["git", "-C", str(bench.ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=100, help="cores in the batch (default 100)")
    parser.add_argument("--jobs", type=int, default=2, help="the batch's --jobs (default 2)")
    parser.add_argument("--scenario-subset", choices=sorted(SUBSETS), default="all", help="which crashes (default all)")
    parser.add_argument("--no-older", dest="older", action="store_false", help="only the TensorFlow of this interpreter")
    parser.add_argument("--workdir", help="where cores and outputs go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (its cores serve the next run)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.cores < 1:
        parser.error("--cores must be at least 1")
    print(f"coreanalyze growth benchmark, {date.today().isoformat()}, {bench.machine()}", flush=True)
    run(args)


if __name__ == "__main__":
    main()
