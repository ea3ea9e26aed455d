#!/usr/bin/env python3
"""How fast coreanalyze reads TensorFlow cores, next to gdb and pystack on the same cores.

    .venv/bin/python bench/run.py [--cores 10] [--workdir DIR] [--keep] [--json results.json]

1. Makes N+1 TensorFlow cores: bench/tf_crasher.py (import tensorflow, run an op, read through
   a null pointer) is run N+1 times, so each core is a different process of the same build.
2. Times, each in a fresh process, with wall time and peak memory (resident memory of the whole
   process tree, sampled every 10 ms, so gdb is counted with the tool; and the largest single
   process):
   - `gdb -batch -ex 'thread apply all bt'` on one core;
   - `pystack core CORE --native-all` on every core (per-core mean);
   - coreanalyze on one core, full HTML report: cold (empty cache directory), warm (the same
     core again), and the plain path (huge libraries read by gdb itself) for reference;
   - `coreanalyze batch --jobs 1` (and --jobs CPUs) on 1 core and on N cores: the cost of
     each additional core;
   - the same N cores through one GdbPool in one process (per-core times).
   coreanalyze's bytecode is compiled once first (into the work directory), as pip would.
3. Prints every figure and the ratios, and the targets they are held against.

Needs tensorflow for the interpreter that runs it (.venv/bin/python after ./setup.sh), gdb and
pystack. Nothing is written outside --workdir
(a temporary directory unless given); it is removed at the end unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

CRASHER = Path(__file__).resolve().parent / "tf_crasher.py"
SAMPLE_EVERY = 0.01
TARGETS = {
    "cold": ("coreanalyze, one core, nothing cached", 3.0, 1024),
    "warm": ("coreanalyze, the same core again", 1.0, None),
    "batch": ("coreanalyze batch, per additional core", 0.3, None),
}


@dataclass
class Measurement:
    name: str
    wall: float  # seconds
    peak_tree_mb: float  # resident memory of the process and all its descendants, summed
    peak_process_mb: float  # the largest single process
    exit_code: int


# --------------------------------------------------------------------------- measuring


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return 0.0


def measure(name: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> Measurement:
    """Run argv once; wall time, peak tree RSS (sampled), largest process (from the kernel)."""
    wrapper = (
        "import json, resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "print(json.dumps([code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n"
    )
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", wrapper, *argv], env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    peak = 0.0
    while proc.poll() is None:
        tree, todo = [], [proc.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo += _children(pid)
        peak = max(peak, sum(_rss_mb(p) for p in tree[1:]))  # the wrapper itself left out
        time.sleep(SAMPLE_EVERY)
    out = proc.stdout.read() if proc.stdout else ""
    wall = time.monotonic() - started
    try:
        code, maxrss_kb = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        code, maxrss_kb = proc.returncode, 0
    return Measurement(name, wall, peak, maxrss_kb / 1024, code)


# --------------------------------------------------------------------------- cores


def tf_python() -> str:
    """The interpreter running the benchmark (a venv's bin/python as it is), if it has TensorFlow."""
    exe = subprocess.run(
        [sys.executable, "-c", "import tensorflow"],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    if exe.returncode != 0:
        sys.exit(f"bench: {sys.executable} cannot import tensorflow (run ./setup.sh, then .venv/bin/python bench/run.py)")
    return sys.executable


def make_cores(python: str, count: int, workdir: Path) -> list[Path]:
    from support.coregen import run_to_core

    cores = []
    for i in range(count):
        case = run_to_core(f"tf-{i}", [python, str(CRASHER)], workdir / f"run-{i}", env={"TF_CPP_MIN_LOG_LEVEL": "3"})
        target = workdir / "cores" / case.core.name
        target.parent.mkdir(exist_ok=True)
        shutil.move(str(case.core), target)
        cores.append(target)
        print(f"  core {i + 1}/{count}: {target.name} ({target.stat().st_size / 2**20:.0f} MiB)", flush=True)
    return cores


# --------------------------------------------------------------------------- runs

POOL_LOOP = r"""
import json, sys, time
from coreanalyze.analyze import AnalyzeOptions, analyze_core
from coreanalyze.gdb.pool import GdbPool
from coreanalyze.render import render
times = []
with GdbPool(size=1) as pool:
    for core in sys.argv[1:]:
        started = time.monotonic()
        result = analyze_core(core, AnalyzeOptions(), gdb_pool=pool)
        render(result.report, "html")
        times.append(time.monotonic() - started)
print(json.dumps(times))
"""

PLAIN_ONE = r"""
import sys
from coreanalyze.analyze import AnalyzeOptions, analyze_core
from coreanalyze.render import render
result = analyze_core(sys.argv[1], AnalyzeOptions(fast_libraries=False))
open(sys.argv[2], "w").write(render(result.report, "html"))
"""


def run(args: argparse.Namespace) -> dict:
    python = tf_python()
    gdb = shutil.which("gdb") or sys.exit("bench: gdb is not installed")
    # pystack comes with the test extra, next to this interpreter when it runs from a venv.
    beside = Path(sys.executable).parent / "pystack"
    pystack = str(beside) if beside.exists() else shutil.which("pystack") or sys.exit("bench: pystack is not installed")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="coreanalyze-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict = {"date": date.today().isoformat(), "machine": machine(), "cores": args.cores, "runs": {}}
    try:
        print(f"making {args.cores + 1} TensorFlow cores in {workdir} ...", flush=True)
        cores = make_cores(python, args.cores + 1, workdir)
        single, batch_cores = cores[0], cores[1:]
        cache = workdir / "cache"
        env = {**os.environ, "COREANALYZE_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
        # As installed by pip: the package's bytecode compiled once (here into the work directory),
        # not recompiled from source at every start.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "coreanalyze")], env=env, stdout=subprocess.DEVNULL, check=False)
        coreanalyze = [sys.executable, "-m", "coreanalyze"]
        runs = results["runs"]

        def record(m: Measurement) -> Measurement:
            runs[m.name] = asdict(m)
            status = "" if m.exit_code == 0 else f"  (exit {m.exit_code})"
            print(f"  {m.name:<34} {m.wall:7.2f} s  {m.peak_tree_mb:7.0f} MiB tree  {m.peak_process_mb:7.0f} MiB largest{status}", flush=True)
            return m

        print("timing ...", flush=True)
        gdb_bt = record(measure("gdb -batch 'thread apply all bt'", [gdb, "-nx", "-batch", "-ex", "thread apply all bt", python, str(single)]))
        pystack_runs = [measure("pystack", [pystack, "core", str(c), "--native-all"]) for c in batch_cores]
        pystack_mean = record(Measurement(
            f"pystack --native-all (mean of {len(batch_cores)})",
            sum(m.wall for m in pystack_runs) / len(pystack_runs),
            max(m.peak_tree_mb for m in pystack_runs),
            max(m.peak_process_mb for m in pystack_runs),
            max(m.exit_code for m in pystack_runs),
        ))
        shutil.rmtree(cache, ignore_errors=True)
        cold = record(measure("coreanalyze cold", [*coreanalyze, str(single), "-o", str(workdir / "cold.html")], env=env))
        warm = record(measure("coreanalyze warm", [*coreanalyze, str(single), "-o", str(workdir / "warm.html")], env=env))
        plain = record(measure("coreanalyze, plain gdb path", [sys.executable, "-c", PLAIN_ONE, str(single), str(workdir / "plain.html")], env=env))

        one_dir, all_dir = workdir / "batch-1", workdir / "batch-n"
        one_dir.mkdir(exist_ok=True)
        os.link(batch_cores[0], one_dir / batch_cores[0].name)
        batch_one = record(measure("coreanalyze batch, 1 core", [*coreanalyze, "batch", str(one_dir), "--out", str(workdir / "out-1"), "--jobs", "1"], env=env))
        all_dir.mkdir(exist_ok=True)
        for c in batch_cores:
            os.link(c, all_dir / c.name)
        batch_all = record(measure(f"coreanalyze batch, {len(batch_cores)} cores", [*coreanalyze, "batch", str(all_dir), "--out", str(workdir / "out-n"), "--jobs", "1"], env=env))
        per_core = (batch_all.wall - batch_one.wall) / max(1, len(batch_cores) - 1)
        runs["batch per additional core"] = per_core
        print(f"  {'batch --jobs 1, per additional core':<34} {per_core:7.2f} s", flush=True)
        jobs = os.cpu_count() or 1
        if jobs > 1:
            parallel_one = record(measure(f"coreanalyze batch -j{jobs}, 1 core", [*coreanalyze, "batch", str(one_dir), "--out", str(workdir / "out-p1"), "--jobs", str(jobs)], env=env))
            parallel_all = record(measure(f"coreanalyze batch -j{jobs}, {len(batch_cores)} cores", [*coreanalyze, "batch", str(all_dir), "--out", str(workdir / "out-pn"), "--jobs", str(jobs)], env=env))
            per_core_parallel = (parallel_all.wall - parallel_one.wall) / max(1, len(batch_cores) - 1)
            runs[f"batch -j{jobs} per additional core"] = per_core_parallel
            print(f"  {f'batch -j{jobs}, per additional core':<34} {per_core_parallel:7.2f} s", flush=True)
        else:
            per_core_parallel = per_core

        loop = subprocess.run([sys.executable, "-c", POOL_LOOP, *map(str, batch_cores)], env=env, capture_output=True, text=True)
        if loop.returncode == 0:
            times = json.loads(loop.stdout.strip().splitlines()[-1])
            runs["pool loop per core"] = times
            later = times[1:] or times
            print(f"  {'one GdbPool, first core':<34} {times[0]:7.2f} s")
            print(f"  {'one GdbPool, each further core':<34} {sum(later) / len(later):7.2f} s (mean; min {min(later):.2f}, max {max(later):.2f})", flush=True)
        else:
            print(f"  pool loop failed: {loop.stderr[-2000:]}")

        print()
        print("ratios")
        ratio("coreanalyze cold vs gdb -batch", gdb_bt.wall, cold.wall)
        ratio("coreanalyze warm vs gdb -batch", gdb_bt.wall, warm.wall)
        ratio("coreanalyze plain path vs gdb -batch", gdb_bt.wall, plain.wall)
        ratio("batch --jobs 1 per additional core vs pystack", pystack_mean.wall, per_core)
        ratio(f"batch -j{jobs} per additional core vs pystack", pystack_mean.wall, per_core_parallel)
        ratio("peak memory: gdb -batch vs coreanalyze cold (tree)", gdb_bt.peak_tree_mb, cold.peak_tree_mb, unit="x less")
        print()
        print("targets")
        check("cold ≤ 3 s, ≤ 1 GiB", cold.wall <= 3.0 and cold.peak_tree_mb <= 1024, f"{cold.wall:.2f} s, {cold.peak_tree_mb:.0f} MiB")
        check("warm ≤ 1 s", warm.wall <= 1.0, f"{warm.wall:.2f} s")
        best = min(per_core, per_core_parallel)
        check("batch ≤ 0.3 s per additional core, faster than pystack", best <= 0.3 and best < pystack_mean.wall, f"{best:.2f} s vs pystack {pystack_mean.wall:.2f} s")
    finally:
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            print(f"kept {workdir}")
    return results


def ratio(label: str, reference: float, ours: float, unit: str = "x faster") -> None:
    if ours > 0:
        print(f"  {label:<52} {reference / ours:6.1f}{unit}")


def check(label: str, ok: bool, detail: str) -> None:
    print(f"  [{'met' if ok else 'MISSED'}] {label}: {detail}")


def machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    gdb = subprocess.run(["gdb", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    return f"{os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB, {platform.platform()}, Python {platform.python_version()}, {gdb[0] if gdb else 'gdb ?'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=int, default=10, help="cores in the batch (default 10; one more is made for the single-core runs)")
    parser.add_argument("--workdir", help="where cores and outputs go (default: a temporary directory, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.cores < 2:
        parser.error("--cores must be at least 2")
    print(f"coreanalyze benchmark, {date.today().isoformat()}, {machine()}")
    run(args)


if __name__ == "__main__":
    main()
