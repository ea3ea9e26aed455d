"""Measure the layout data of an installed TensorFlow from its headers (a maintainer's tool).

    python -m coreanalyze.opinstance.measure /path/to/python-with-tensorflow [--cxx g++]

Compiles layouts/probe.cc against that interpreter's `tf.sysconfig` flags, runs it, and prints
the TOML file for layouts/ (framework, the version, the offsets). The analyzer itself never
imports tensorflow; this runs the given interpreter to ask it for its headers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from coreanalyze.opinstance.layouts import LAYOUT_DIR, major_minor

PROBE = LAYOUT_DIR / "probe.cc"
ASK_TENSORFLOW = (
    "import json, tensorflow as tf; "
    "print(json.dumps([tf.__version__, tf.sysconfig.get_compile_flags(), tf.sysconfig.get_link_flags()]))"
)


def measure(python: str, cxx: str = "g++", timeout: float = 900.0) -> tuple[str, dict]:
    """(TensorFlow version, the probe's measurements) for the TensorFlow of `python`."""
    asked = subprocess.run(
        [python, "-c", ASK_TENSORFLOW], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    if asked.returncode != 0:
        raise RuntimeError(f"{python} cannot import tensorflow: {asked.stderr[-2000:]}")
    version, compile_flags, link_flags = json.loads(asked.stdout.strip().splitlines()[-1])
    library_dirs = [flag[2:] for flag in link_flags if flag.startswith("-L")]
    with tempfile.TemporaryDirectory(prefix="coreanalyze-probe-") as tmp:
        binary = Path(tmp) / "probe"
        built = subprocess.run(
            # NDEBUG: no debug checks, whose logging helpers some wheels do not export.
            [cxx, "-std=c++17", "-w", "-O0", "-DNDEBUG", str(PROBE), "-o", str(binary), *compile_flags, *link_flags],
            capture_output=True, text=True, timeout=timeout,
        )
        if built.returncode != 0:
            raise RuntimeError(f"the layout probe did not compile against TensorFlow {version}:\n{built.stderr[-4000:]}")
        ran = subprocess.run(
            [str(binary)], capture_output=True, text=True, timeout=60,
            env={**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(library_dirs)},
        )
        if ran.returncode != 0:
            raise RuntimeError(f"the layout probe failed: {ran.stderr[-2000:]}")
    measured = json.loads(ran.stdout)
    check(measured)
    return version, measured


def _inline_table(values: dict) -> str:
    return "{ " + ", ".join(f"{key} = {json.dumps(value)}" for key, value in values.items()) + " }"


def check(measured: dict) -> None:
    """A probe that could not find a field says -1 (or checked = false): no layout from it."""
    for group, values in measured.items():
        for key, value in (values.items() if isinstance(values, dict) else [(group, values)]):
            if value is False or (not isinstance(value, bool) and value == -1):
                raise RuntimeError(f"the layout probe could not measure {group}.{key}")


def to_toml(version: str, measured: dict) -> str:
    lines = [
        f"# Where the fields an op instance is read from sit in TensorFlow {major_minor(version)},",
        "# measured from the wheel's own headers by layouts/probe.cc:",
        "#     python -m coreanalyze.opinstance.measure /path/to/python-with-tensorflow",
        "# Offsets are bytes from the start of the object; *_word: which pointer-sized word of a",
        "# two-word view holds the data pointer.",
        "",
        'framework = "tensorflow"',
        f'versions = ["{major_minor(version)}"]',
        "",
        "[layout]",
    ]
    for key, value in measured.items():
        lines.append(f"{key} = {_inline_table(value) if isinstance(value, dict) else value}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("python", help="an interpreter that can import tensorflow")
    parser.add_argument("--cxx", default="g++")
    args = parser.parse_args(argv)
    if shutil.which(args.cxx) is None:
        print(f"measure: no C++ compiler {args.cxx}", file=sys.stderr)
        return 2
    try:
        version, measured = measure(args.python, args.cxx)
    except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as e:
        print(f"measure: {e}", file=sys.stderr)
        return 3
    sys.stdout.write(to_toml(version, measured))
    return 0


if __name__ == "__main__":
    sys.exit(main())
