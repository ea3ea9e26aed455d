"""Are the reports of two revisions byte-identical on the test corpus? (for refactors)

    .venv/bin/python bench/same_reports.py --reference main          # C and Python crashers
    .venv/bin/python bench/same_reports.py --reference main --tf     # and the TensorFlow corpus
    .venv/bin/python bench/same_reports.py --reference main --tf-scenario allocator_heap_corruption

Builds the crashers' cores once (tests/support/coregen.py, tests/support/tfcores.py), then runs the CLI of the
reference revision (exported with `git archive` into a temporary directory) and of this source
tree on every core, in every format (json, html, text, markdown, and the default verdict with its
HTML report), each run in its own output directory and symbol cache. Every file must be equal,
stdout and stderr included, but for the output directory's own name in the verdict. Exit 0 when
all are equal; the differing files are listed otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

FORMATS = ("json", "html", "text", "markdown")
PYTHON_SCRIPTS = ("three_deep.py", "broken_caller.py", "sleeper_thread.py")


def corpus(root: Path, with_tf: bool, tf_scenarios: list[str] = ()) -> list[dict]:
    from support.corecache import C_CRASHERS, CoreCache
    from support.paths import PYCRASHERS
    from support.pythons import SYSTEM_PYTHON, pyenv_python

    cache = CoreCache(root / "cores")
    cases = [cache.c_crash(name) for name in C_CRASHERS]
    for minor in ("10", "11", "12", "13", "system"):
        exe = SYSTEM_PYTHON.resolve() if minor == "system" else pyenv_python(minor)
        if exe is None:
            continue
        for script in PYTHON_SCRIPTS:
            cases.append(cache.python_crash(f"{script}-{minor}", exe, PYCRASHERS / script))
    if with_tf or tf_scenarios:
        from support.tfcores import SCENARIOS, TFCoreCache, require_tensorflow

        tf = TFCoreCache(root / "tfcores", require_tensorflow())
        cases += [tf.get(name) for name in (SCENARIOS if with_tf else tf_scenarios)]
    return [{"name": c.name, "core": str(c.core), "exe": str(c.exe)} for c in cases]


def reports(source: Path, cases: list[dict], out: Path) -> None:
    """Every report of every core by the CLI of the source tree at `source`."""
    work = out.with_name(out.name + "-work")
    for directory in (out, work):
        directory.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(source), COREANALYZE_CACHE_DIR=str(out.with_name(out.name + "-cache")))
    for case in cases:
        runs = [(fmt, ["--format", fmt, "-o", f"{case['name']}.{fmt}"]) for fmt in FORMATS]
        runs.append(("verdict", ["-o", f"{case['name']}.verdict.html"]))
        for label, args in runs:
            run = subprocess.run(
                [sys.executable, "-m", "coreanalyze", case["core"], "--python", case["exe"], *args],
                env=env, cwd=work, capture_output=True, text=True,
            )  # fmt: skip
            (out / f"{case['name']}.{label}.run").write_text(f"{run.returncode}\n{run.stdout}\n{run.stderr}")
        for produced in work.iterdir():
            shutil.move(produced, out / produced.name)


def differing(a: Path, b: Path) -> list[str]:
    own_dir = re.compile(rb"\S*-work/")

    def content(path: Path) -> bytes:
        data = path.read_bytes()
        return own_dir.sub(b"", data) if path.suffix == ".run" else data

    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir()), "the runs produced different files"
    return [n for n in names if content(a / n) != content(b / n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, help="git revision to compare with (e.g. main)")
    parser.add_argument("--tf", action="store_true", help="include the TensorFlow corpus (~300 MB per core)")
    parser.add_argument("--tf-scenario", action="append", default=[], metavar="NAME",
                        help="include this TensorFlow scenario (tests/support/tfcores.py); may be repeated")  # fmt: skip
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="same-reports-") as tmp:
        root = Path(tmp)
        reference = root / "reference"
        reference.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", options.reference], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(reference)], input=archive.stdout, check=True)
        cases = corpus(root, options.tf, options.tf_scenario)
        reports(reference, cases, root / "reference-reports")
        reports(REPO, cases, root / "reports")
        bad = differing(root / "reference-reports", root / "reports")
        files = len(list((root / "reports").iterdir()))
        print(json.dumps({"cores": len(cases), "files": files, "differing": bad}, indent=1))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
