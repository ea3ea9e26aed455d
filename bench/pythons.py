"""Is a core of CPython 3.14 or 3.15 analyzed as fast as one of 3.13, the same program?

    .venv/bin/python bench/pythons.py [--repeat 5]

The same crash (tests/pycrashers/sleeper_thread.py: two Python threads, a native fault) is run
under Debian unstable's CPython 3.13, 3.14 and 3.15 (the tests' root, made by ./setup.sh; one
toolchain and one set of build flags for all three, their debug info installed), and each core
is analyzed from outside with `--sysroot ROOT`: cold (an empty cache) once, then warm, the median
of --repeat runs; pystack reads each core too, in the same run. Needs root (chroot).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.paths import PYCRASHERS  # noqa: E402
from support.sidroot import SidCrashes  # noqa: E402

VERSIONS = ("3.13", "3.14", "3.15")


def seconds(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    crashes = SidCrashes()
    rows = []
    try:
        for version in VERSIONS:
            case = crashes.crash(f"bench-{version}", f"/usr/bin/python{version}", PYCRASHERS / "sleeper_thread.py")
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, COREANALYZE_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
                tool = [sys.executable, "-m", "coreanalyze", str(case.core), "--sysroot", str(crashes.root), "-o", os.devnull]
                cold = seconds(tool, env)
                warm = statistics.median(seconds(tool, env) for _ in range(args.repeat))
            libs = crashes.root / "usr" / "lib" / "x86_64-linux-gnu"
            pystack = [sys.executable, "-m", "pystack", "core", str(case.core), str(case.exe), "--lib-search-path", str(libs)]
            theirs = statistics.median(seconds(pystack, dict(os.environ)) for _ in range(args.repeat))
            rows.append((version, cold, warm, theirs))
    finally:
        crashes.close()
    base = {name: value for name, value in zip(("cold", "warm"), rows[0][1:3])}
    print(f"{'Python':8} {'cold':>8} {'warm':>8} {'pystack':>8} {'warm/pystack':>13} {'cold vs 3.13':>13} {'warm vs 3.13':>13}")
    for version, cold, warm, theirs in rows:
        print(
            f"{version:8} {cold:7.2f}s {warm:7.2f}s {theirs:7.2f}s {warm / theirs:12.2f}x"
            f" {cold / base['cold']:12.2f}x {warm / base['warm']:12.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
