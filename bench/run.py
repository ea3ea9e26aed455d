#!/usr/bin/env python3
"""How fast coreanalyze reads TensorFlow cores, next to gdb and pystack on the same cores.

    .venv/bin/python bench/run.py [--cores 4] [--scenario NAME] [--repeat 5] [--reference REV]
                                  [--workdir DIR] [--keep] [--json results.json]

1. Makes N+1 TensorFlow cores, each a different process of the same build: bench/tf_crasher.py
   (import tensorflow, run an op, read through a null pointer), or with --scenario one of the
   tests' TensorFlow crashes (tests/support/tfcores.py: `allocator_heap_corruption` is a heap
   overflow that glibc's malloc catches). A kept --workdir keeps its cores for the next run.
2. Times, each in a fresh process, the median of --repeat runs, with wall time and peak memory
   (resident memory of the whole process tree, sampled every 10 ms, so gdb is counted with the
   tool; and the largest single process):
   - `gdb -batch -ex 'thread apply all bt'` and `pystack core CORE PY --native-all` on one core;
   - coreanalyze on that core, full HTML report: cold (empty cache directory), then warm (the
     same core again); with --plain also the plain path (huge libraries read by gdb itself);
   - `coreanalyze batch --jobs 1` on 1 core and on N cores: the cost of each additional core;
   - where each stage's time goes on a warm core: cProfile of one in-process analysis, and the
     time spent waiting for gdb's answers (by MI command).
   With --reference REV, the coreanalyze figures are taken for that revision of this project
   too (a `git worktree` in a temporary directory, run by the same interpreter), in the same run.
   coreanalyze's bytecode is compiled once first (into the work directory), as pip would.
3. Prints every figure, the ratios against gdb and pystack, and the targets they are held against.

Needs tensorflow for the interpreter that runs it (.venv/bin/python after ./setup.sh), gdb and
pystack. Nothing is written outside --workdir (a temporary directory unless given; removed at the
end unless --keep or --workdir).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

CRASHER = Path(__file__).resolve().parent / "tf_crasher.py"
SAMPLE_EVERY = 0.01
# Ratios against pystack on the same core, in the same run (issue: "speed is a feature").
TARGETS = {"cold": 3.0, "warm": 1.5, "batch": 0.6}
CACHE_TARGET_MB = 150  # written by one cold run of a TensorFlow core


@dataclass
class Measurement:
    name: str
    wall: float  # seconds (the median of the runs)
    peak_tree_mb: float  # resident memory of the process and all its descendants, summed (max of the runs)
    peak_process_mb: float  # the largest single process
    exit_code: int
    walls: tuple[float, ...] = ()
    cpu: float = 0.0  # user + system seconds of the process tree (the median of the runs): less moved by other load than wall time


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


def measure_once(name: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> Measurement:
    """Run argv once; wall time, peak tree RSS (sampled), largest process (from the kernel)."""
    wrapper = (
        "import json, resource, subprocess, sys\n"
        "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode\n"
        "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps([code, usage.ru_maxrss, usage.ru_utime + usage.ru_stime]))\n"
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
        code, maxrss_kb, cpu = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        code, maxrss_kb, cpu = proc.returncode, 0, 0.0
    return Measurement(name, wall, peak, maxrss_kb / 1024, code, (wall,), cpu)


def summarize(name: str, runs: list[Measurement]) -> Measurement:
    """The median wall and CPU time of the runs, the peaks' maximum."""
    walls = tuple(m.wall for m in runs)
    return Measurement(
        name,
        statistics.median(walls),
        max(m.peak_tree_mb for m in runs),
        max(m.peak_process_mb for m in runs),
        max(m.exit_code for m in runs),
        walls,
        statistics.median(m.cpu for m in runs),
    )


def measure(name: str, argv: list[str], repeat: int, env: dict | None = None, before=None) -> Measurement:
    """`repeat` runs (before() is called ahead of each), summarized."""
    runs = []
    for _ in range(repeat):
        if before is not None:
            before()
        runs.append(measure_once(name, argv, env))
    return summarize(name, runs)


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


def kept_core(directory: Path) -> Path | None:
    """The core a kept work directory holds for one crash, if any (bench/growth.py asks too)."""
    found = sorted(p for p in directory.glob("core*") if p.is_file()) if directory.is_dir() else []
    return found[0] if found else None


def make_cores(python: str, count: int, workdir: Path, scenario: str | None) -> list[Path]:
    """count cores of one crash, each a different process; cores a kept work directory already
    holds are used again."""
    from support.coregen import run_to_core

    if scenario is not None:
        from support.tfcores import SCENARIOS, TF_CORPUS, build_op_library, inject_fault, quiet_env

        chosen = SCENARIOS[scenario]
        argv = [python, str(TF_CORPUS / chosen.script)]
        if chosen.uses_op_library:
            argv.append(str(build_op_library(Path(python), workdir)))
        argv += chosen.args
        env = quiet_env()
    else:
        chosen, argv, env = None, [python, str(CRASHER)], {"TF_CPP_MIN_LOG_LEVEL": "3"}
    cores = []
    for i in range(count):
        directory = workdir / f"{scenario or 'tf'}-{i}"
        core = kept_core(directory)
        if core is None:
            if chosen is not None and chosen.injection is not None:
                case = inject_fault(f"{scenario}-{i}", argv, directory, chosen.injection, env=env)
            else:
                case = run_to_core(f"{scenario or 'tf'}-{i}", argv, directory, env=env, timeout=600)
            core = case.core
        cores.append(core)
        print(f"  core {i + 1}/{count}: {core} ({core.stat().st_size / 2**20:.0f} MiB)", flush=True)
    return cores


# --------------------------------------------------------------------------- revisions


@contextmanager
def revision_tree(rev: str | None) -> Iterator[Path]:
    """This source tree, or a `git worktree` of rev in a temporary directory (removed after)."""
    if rev is None:
        yield ROOT
        return
    tmp = Path(tempfile.mkdtemp(prefix="coreanalyze-reference-"))
    tree = tmp / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


# Runs inside one revision's tree: one in-process analysis of a core, profiled, with the time
# spent waiting for gdb's answers summed per MI command (the command's first word).
PROFILE_ONE = r"""
import cProfile, json, pstats, sys, time
from coreanalyze.gdb.session import GdbSession
from coreanalyze.pipeline.analyze import AnalyzeOptions, analyze_core
from coreanalyze.render import render

waits = {}
original = GdbSession.mi

def timed_mi(self, command, timeout=None, **kw):
    started = time.perf_counter()
    try:
        return original(self, command, timeout, **kw)
    finally:
        word = command.split()[0] if command.split() else "?"
        if word == "-interpreter-exec":
            word = "console " + " ".join(command.split()[2:3]).strip('"')
        total, count = waits.get(word, (0.0, 0))
        waits[word] = (total + time.perf_counter() - started, count + 1)

GdbSession.mi = timed_mi
core, python, out = sys.argv[1:4]
profile = cProfile.Profile()
started = time.perf_counter()
profile.enable()
result = analyze_core(core, AnalyzeOptions(python=python))
render(result.report, "html")
profile.disable()
wall = time.perf_counter() - started
stats = pstats.Stats(profile).stats
functions = []
for (path, line, name), (calls, _, tottime, cumtime, _) in stats.items():
    functions.append({"file": path, "line": line, "function": name, "calls": calls, "tottime": tottime, "cumtime": cumtime})
json.dump({"wall": wall, "gdb_waits": waits, "functions": functions}, open(out, "w"))
"""


def profile_stages(tree: Path, core: Path, python: str, env: dict, out: Path) -> dict | None:
    done = subprocess.run([sys.executable, "-c", PROFILE_ONE, str(core), python, str(out)], env={**env, "PYTHONPATH": str(tree)},
                          cwd=out.parent, capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        print(f"  profile failed: {done.stderr[-2000:]}")
        return None
    return json.loads(out.read_text())


def print_profile(label: str, profile: dict, top: int = 12) -> None:
    """The orchestrator's own stages (functions of coreanalyze/pipeline/analyze.py and the stages it
    declares), the time waiting on gdb, and the functions that spend the most time themselves."""
    functions = profile["functions"]
    waits = profile["gdb_waits"]
    gdb_total = sum(t for t, _ in waits.values())
    print(f"  {label}: {profile['wall']:.2f} s in-process (profiled), of which waiting on gdb {gdb_total:.2f} s")
    stages = [f for f in functions if f["file"].endswith(("coreanalyze/pipeline/analyze.py", "coreanalyze/pipeline/stages.py")) and not f["function"].startswith("<")]
    for f in sorted(stages, key=lambda f: -f["cumtime"])[:top]:
        print(f"    stage {f['function']:<36} {f['cumtime']:7.3f} s cumulative  ({f['calls']} calls)")
    for word, (total, count) in sorted(waits.items(), key=lambda kv: -kv[1][0])[:8]:
        print(f"    gdb   {word:<36} {total:7.3f} s  ({count} commands)")
    own = [f for f in functions if "coreanalyze" in f["file"] or "site-packages" in f["file"] or f["file"] == "~"]
    for f in sorted(own, key=lambda f: -f["tottime"])[:top]:
        where = f["file"].split("/coreanalyze/")[-1] if "/coreanalyze/" in f["file"] else os.path.basename(f["file"])
        print(f"    self  {f['function'][:36]:<36} {f['tottime']:7.3f} s  ({f['calls']} calls) {where}:{f['line']}")


# --------------------------------------------------------------------------- runs

PLAIN_ONE = r"""
import sys
from coreanalyze.pipeline.analyze import AnalyzeOptions, analyze_core
from coreanalyze.render import render
result = analyze_core(sys.argv[1], AnalyzeOptions(python=sys.argv[3], fast_libraries=False))
open(sys.argv[2], "w").write(render(result.report, "html"))
"""


@dataclass
class Revision:
    """One revision's tree, ready to run: its environment (own cache, compiled bytecode)."""

    label: str
    tree: Path
    work: Path
    env: dict

    @property
    def cache(self) -> Path:
        return self.work / "cache"

    def tool(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "coreanalyze", *args]


def prepare(label: str, tree: Path, workdir: Path) -> Revision:
    work = workdir / f"out-{label}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "COREANALYZE_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(tree)}
    # As installed by pip: the package's bytecode compiled once (here into the work directory),
    # not recompiled from source at every start.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "coreanalyze")], env=env, stdout=subprocess.DEVNULL, check=False)
    return Revision(label, tree, work, env)


def interleaved(name: str, revisions: list[Revision], argv, repeat: int, record, before=None) -> dict[str, Measurement]:
    """`repeat` rounds, each running every revision once in turn (so that a change of the
    machine's load falls on all of them alike); argv(rev) and before(rev) per revision."""
    runs: dict[str, list[Measurement]] = {rev.label: [] for rev in revisions}
    for _ in range(repeat):
        for rev in revisions:
            if before is not None:
                before(rev)
            # Run from the revision's work directory: `python -m` puts the current directory
            # first on sys.path, where a source tree would shadow PYTHONPATH's.
            runs[rev.label].append(measure_once(f"{rev.label}: {name}", argv(rev), rev.env, cwd=rev.work))
            after = wait_for_later_work(rev.cache)
            if after >= 0.05:
                later_work.setdefault(f"{rev.label}: {name}", []).append(after)
    return {label: record(summarize(f"{label}: {name}", found)) for label, found in runs.items()}


# Seconds the cache entries for later runs took after a command had returned (a process it
# leaves behind writes them), per figure: not what the user waits for, shown beside it.
later_work: dict[str, list[float]] = {}


def wait_for_later_work(cache: Path) -> float:
    """Wait until no process the command left behind works on its cache; the seconds waited.
    Waited for between runs so that one run's leftovers never load the next."""
    from coreanalyze.base.later import wait_for_detached

    started = time.monotonic()
    wait_for_detached(str(cache))
    return time.monotonic() - started


def coreanalyze_figures(revisions: list[Revision], cores: list[Path], python: str, args, record) -> dict[str, dict]:
    """cold, warm, batch per additional core (and the plain path) of each revision."""
    single, batch_cores = cores[0], cores[1:] if len(cores) > 2 else cores
    figures: dict[str, dict] = {rev.label: {} for rev in revisions}

    def one(rev: Revision) -> list[str]:
        return rev.tool(str(single), "--python", python, "-o", str(rev.work / "report.html"))

    def empty_cache(rev: Revision) -> None:
        shutil.rmtree(rev.cache, ignore_errors=True)

    for key, before in (("cold", empty_cache), ("warm", None)):
        for label, m in interleaved(f"coreanalyze {key}", revisions, one, args.repeat, record, before).items():
            figures[label][key] = m
        if key == "cold":  # each cold run starts empty: the cache now holds what the last one wrote
            for rev in revisions:
                figures[rev.label]["cold_cache_mb"] = disk_usage(rev.cache) / 2**20
                print(f"  {rev.label + ': cache written by one cold run':<44} {figures[rev.label]['cold_cache_mb']:7.1f} MiB", flush=True)
                waited = later_work.get(f"{rev.label}: coreanalyze cold")
                if waited:
                    figures[rev.label]["cold_later_s"] = statistics.median(waited)
                    print(f"  {rev.label + ': cache work after it returned':<44} {statistics.median(waited):7.2f} s (median)", flush=True)
    if args.plain:
        def plain(rev: Revision) -> list[str]:
            return [sys.executable, "-c", PLAIN_ONE, str(single), str(rev.work / "plain.html"), python]

        for label, m in interleaved("coreanalyze plain gdb path", revisions, plain, args.repeat, record).items():
            figures[label]["plain"] = m

    for rev in revisions:
        for directory, members in ((rev.work / "batch-1", batch_cores[:1]), (rev.work / "batch-n", batch_cores)):
            directory.mkdir()
            for core in members:
                os.symlink(core, directory / f"{core.parent.name}-{core.name}")

    def batch(name: str):
        def argv(rev: Revision) -> list[str]:
            return rev.tool("batch", str(rev.work / name), "--out", str(rev.work / f"{name}-out"), "--jobs", "1")

        def before(rev: Revision) -> None:
            shutil.rmtree(rev.work / f"{name}-out", ignore_errors=True)

        return argv, before

    argv, before = batch("batch-1")
    ones = interleaved("coreanalyze batch, 1 core", revisions, argv, args.repeat, record, before)
    argv, before = batch("batch-n")
    alls = interleaved(f"coreanalyze batch, {len(batch_cores)} cores", revisions, argv, args.repeat, record, before)
    for rev in revisions:
        per_core = (alls[rev.label].wall - ones[rev.label].wall) / max(1, len(batch_cores) - 1)
        per_core_cpu = (alls[rev.label].cpu - ones[rev.label].cpu) / max(1, len(batch_cores) - 1)
        figures[rev.label]["batch"] = per_core
        figures[rev.label]["batch_cpu"] = per_core_cpu
        figures[rev.label]["batch_peak_tree_mb"] = alls[rev.label].peak_tree_mb
        print(f"  {rev.label + ': batch, per additional core':<44} {per_core:7.2f} s  ({per_core_cpu:.2f} s CPU)", flush=True)
    if args.profile:
        for rev in revisions:
            figures[rev.label]["profile"] = profile_stages(rev.tree, single, python, rev.env, rev.work / "profile.json")
    return figures


def disk_usage(directory: Path) -> int:
    """Bytes a directory holds on disk (sparse files count what they hold)."""
    total = 0
    for folder, dirs, files in os.walk(directory):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total


def run(args: argparse.Namespace) -> dict:
    python = tf_python()
    gdb = shutil.which("gdb") or sys.exit("bench: gdb is not installed")
    # pystack comes with the test extra, next to this interpreter when it runs from a venv.
    beside = Path(sys.executable).parent / "pystack"
    pystack = str(beside) if beside.exists() else shutil.which("pystack") or sys.exit("bench: pystack is not installed")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="coreanalyze-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict = {"date": date.today().isoformat(), "machine": machine(), "cores": args.cores, "scenario": args.scenario,
                     "repeat": args.repeat, "runs": {}, "revisions": {}}  # fmt: skip
    try:
        print(f"making {args.cores + 1} TensorFlow cores in {workdir} ...", flush=True)
        cores = make_cores(python, args.cores + 1, workdir, args.scenario)
        # The cores name the interpreter's real binary; a venv's bin/python is given as it is.
        single = cores[0]
        runs = results["runs"]

        def record(m: Measurement) -> Measurement:
            runs[m.name] = asdict(m)
            status = "" if m.exit_code == 0 else f"  (exit {m.exit_code})"
            spread = f"  [{min(m.walls):.2f}-{max(m.walls):.2f}]" if len(m.walls) > 1 else ""
            print(f"  {m.name:<44} {m.wall:7.2f} s  {m.cpu:6.2f} s CPU  {m.peak_tree_mb:6.0f} MiB tree  {m.peak_process_mb:6.0f} MiB largest{spread}{status}", flush=True)
            return m

        print(f"timing (median of {args.repeat}) ...", flush=True)
        gdb_bt = record(measure("gdb -batch 'thread apply all bt'", [gdb, "-nx", "-batch", "-ex", "thread apply all bt", python, str(single)], args.gdb_repeat))
        pystack_one = record(measure("pystack core CORE PY --native-all", [pystack, "core", str(single), python, "--native-all"], args.repeat))
        with revision_tree(args.reference) as reference_tree:
            revisions = [prepare("this", ROOT, workdir)]
            if args.reference:
                revisions.append(prepare("reference", reference_tree, workdir))
            figures = coreanalyze_figures(revisions, cores, python, args, record)
        results["revisions"]["this tree"] = figures["this"]
        if args.reference:
            results["revisions"][f"reference {args.reference}"] = figures["reference"]
        print()
        for label, figures in results["revisions"].items():
            if figures.get("profile"):
                print_profile(label, figures["profile"])
        print()
        print("ratios (coreanalyze / other tool, on the same core in this run: wall time, and CPU time)")
        for label, figures in results["revisions"].items():
            for key in ("cold", "warm"):
                m = figures[key]
                print(f"  {label}, {key:<5}  {m.wall / pystack_one.wall:6.2f}x pystack ({m.cpu / max(pystack_one.cpu, 1e-9):5.2f}x CPU)"
                      f"   {m.wall / gdb_bt.wall:6.3f}x gdb -batch ({m.cpu / max(gdb_bt.cpu, 1e-9):5.3f}x CPU)")  # fmt: skip
            print(f"  {label}, batch per additional core  {figures['batch'] / pystack_one.wall:6.2f}x pystack"
                  f" ({figures['batch_cpu'] / max(pystack_one.cpu, 1e-9):5.2f}x CPU)")  # fmt: skip
        if args.reference:
            ours, theirs = results["revisions"]["this tree"], results["revisions"][f"reference {args.reference}"]
            print()
            print(f"this tree vs {args.reference} (time here / time there)")
            for key in ("cold", "warm"):
                print(f"  {key:<5} {ours[key].wall:6.2f} s vs {theirs[key].wall:6.2f} s  {ours[key].wall / theirs[key].wall:5.2f}x;"
                      f"  CPU {ours[key].cpu:.2f} s vs {theirs[key].cpu:.2f} s;"
                      f"  peak {ours[key].peak_tree_mb:.0f} vs {theirs[key].peak_tree_mb:.0f} MiB")  # fmt: skip
            print(f"  batch {ours['batch']:6.2f} s vs {theirs['batch']:6.2f} s per additional core;"
                  f"  CPU {ours['batch_cpu']:.2f} s vs {theirs['batch_cpu']:.2f} s")  # fmt: skip
        print()
        print("targets (this tree, against pystack)")
        ours = results["revisions"]["this tree"]
        for key, limit in TARGETS.items():
            value = ours[key].wall if key != "batch" else ours[key]
            check(f"{key} ≤ {limit}x pystack", value <= limit * pystack_one.wall, f"{value:.2f} s vs pystack {pystack_one.wall:.2f} s")
        check("peak memory (tree), cold ≤ pystack's", ours["cold"].peak_tree_mb <= pystack_one.peak_tree_mb,
              f"{ours['cold'].peak_tree_mb:.0f} MiB vs pystack {pystack_one.peak_tree_mb:.0f} MiB")  # fmt: skip
        check(f"cache written by a cold run ≤ {CACHE_TARGET_MB} MiB", ours["cold_cache_mb"] <= CACHE_TARGET_MB, f"{ours['cold_cache_mb']:.1f} MiB")
    finally:
        for figures in results["revisions"].values():
            for key, value in list(figures.items()):
                if isinstance(value, Measurement):
                    figures[key] = asdict(value)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        elif args.keep:
            print(f"kept {workdir}")
    return results


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
    parser.add_argument("--cores", type=int, default=4, help="cores in the batch (default 4; one more is made for the single-core runs)")
    parser.add_argument("--scenario", help="one of the tests' TensorFlow crashes (tests/support/tfcores.py) instead of bench/tf_crasher.py")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each figure, the median is shown (default 5)")
    parser.add_argument("--gdb-repeat", type=int, help="runs of gdb -batch (default: --repeat; it takes ~15 s a run)")
    parser.add_argument("--reference", help="also time this git revision of the project, in the same run")
    parser.add_argument("--plain", action="store_true", help="also time the plain gdb path (huge libraries read by gdb)")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="leave out the per-stage profile")
    parser.add_argument("--workdir", help="where cores and outputs go, kept (default: a temporary directory, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.cores < 2:
        parser.error("--cores must be at least 2")
    if args.gdb_repeat is None:
        args.gdb_repeat = args.repeat
    print(f"coreanalyze benchmark, {date.today().isoformat()}, {machine()}")
    run(args)


if __name__ == "__main__":
    main()
