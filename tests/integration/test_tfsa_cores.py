"""TensorFlow's security advisories as known crashes (coreanalyze/known/tfsa.toml), on real cores
of a TensorFlow the advisories name as affected: 2.10.0 (tests/advisory_tensorflow.txt), run by
pyenv's CPython 3.10 and killed by the advisories' own reproducers (tf_corpus/advisories/).

- TFSA-2022-145: DynamicStitch faults (null dereference) in the eager runtime before its kernel
  runs; only its generated Python wrapper (dynamic_stitch) names the op. Fixed in 2.10.1.
- TFSA-2022-155: TensorListResize's kernel CHECK-fails. Fixed in 2.10.1 (and 2.8.4, 2.9.3, 2.11.0).
- TFSA-2023-006: SparseSparseMaximum's kernel (SparseSparseBinaryOpShared) dereferences null.
  Fixed in 2.11.1 and 2.12.0: the 2.10 line never got it, so its fix is 2.11.1.

Each is said in the report ("TFSA-..., fixed in X; this process ran 2.10.0", the advice's first
line), in a batch's fleet view (summary.json, index.html), and in triage of the pasted backtrace
(where the version is unknown: "fixed in ..." without what it ran). A process that ran a patched
release is not told it is one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.advisorycores import advisory_core, make_advisory_python, requirement
from support.clirun import analyze_json, crashed_thread, run_cli
from support.pastes import gdb_backtrace_text

from coreanalyze.known import CrashFacts, load_known, release_fix
from coreanalyze.known.facts import OP_WRAPPER_FILE

pytestmark = [pytest.mark.tf, pytest.mark.slow]

TF_VERSION = requirement("tensorflow-cpu")

# scenario -> (advisory, the release with its fix for 2.10's line, fault kind of the core)
CASES = {
    "tfsa_2022_145_dynamic_stitch": ("TFSA-2022-145", "2.10.1", "null-deref"),
    "tfsa_2022_155_tensor_list_resize": ("TFSA-2022-155", "2.10.1", "check-failure"),
    "tfsa_2023_006_sparse_sparse_maximum": ("TFSA-2023-006", "2.11.1", "null-deref"),
}


@pytest.fixture(scope="module")
def advisory_python(tmp_path_factory) -> Path:
    return make_advisory_python(tmp_path_factory.mktemp("advisory-tensorflow"))


@pytest.fixture(scope="module")
def advisory_cores(advisory_python, tmp_path_factory):
    """scenario -> (its core case, the plain analysis's JSON); the cores (~220 MB each) are
    removed when the module is done."""
    where = tmp_path_factory.mktemp("advisory-cores")
    made = {}
    for scenario in CASES:
        case = advisory_core(advisory_python, scenario, where)
        made[scenario] = (case, analyze_json(case.core, "--python", str(case.exe)))
    yield made
    for case, _ in made.values():
        case.core.unlink(missing_ok=True)


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_the_core_is_the_advisory_with_its_fix_and_what_it_ran(advisory_cores, scenario):
    advisory, fixed, fault_kind = CASES[scenario]
    _case, report = advisory_cores[scenario]
    cls = report["classification"]
    assert report["environment"]["tensorflow_version"] == TF_VERSION
    assert cls["fault_kind"] == fault_kind
    known = cls["known"]
    assert known is not None, cls["summary"]
    assert known["id"] == advisory
    assert known["fixed_in"] == {"tensorflow": fixed}
    assert known["ran"] == {"tensorflow": TF_VERSION}
    assert known["note"] == f"{advisory}, fixed in {fixed}; this process ran {TF_VERSION}"
    assert known["url"].endswith(f"/tensorflow/security/advisory/{advisory.lower()}.md")
    assert cls["advice"][0].startswith(f"Known crash: {advisory} (CVE-")
    assert f"fixed in {fixed}; this process ran {TF_VERSION}" in cls["advice"][0]


def test_a_process_on_the_patched_release_is_not_told(advisory_cores):
    """The same crashing thread with the fix's release (or a later line) matches no advisory;
    with the version unknown it matches and says every patched release."""
    known = load_known()
    for scenario, (advisory, fixed, _kind) in CASES.items():
        _case, report = advisory_cores[scenario]
        thread = crashed_thread(report)["frames"]
        frames = tuple(f["function"] for f in thread if f["function"])
        wrappers = tuple(f["function"] for f in thread if f["kind"] == "python" and OP_WRAPPER_FILE.search(f["file"] or ""))
        facts = dict(fault_kind=report["classification"]["fault_kind"], frames=frames, op_wrappers=wrappers)
        assert known.match(CrashFacts(**facts, versions={"tensorflow": TF_VERSION})).id == advisory
        for patched in (fixed, "2.12.0", "2.16.2"):
            entry = known.match(CrashFacts(**facts, versions={"tensorflow": patched}))
            # Another advisory of the same op may still be open for that release (DynamicStitch's
            # TFSA-2023-018 is fixed in 2.11.1 only): never one whose fix it has.
            assert entry is None or entry.id != advisory and not release_fix(patched, entry.fixed_in["tensorflow"])[1], (
                scenario,
                patched,
                entry,
            )
        assert known.match(CrashFacts(**facts, versions={"tensorflow": "2.16.2"})) is None
        unknown = known.match(CrashFacts(**facts))
        assert unknown.id == advisory
        assert unknown.verdict(CrashFacts(**facts))["note"].startswith(f"{advisory}, fixed in ")


def test_the_markdown_report_says_it(advisory_cores):
    case, _ = advisory_cores["tfsa_2022_155_tensor_list_resize"]
    run = run_cli(str(case.core), "--python", str(case.exe), "--format", "markdown", "-o", "-")
    assert run.code == 0, run.stderr
    assert f"TFSA-2022-155, fixed in 2.10.1; this process ran {TF_VERSION}" in run.stdout


def test_the_fleet_view_names_each_advisory(advisory_cores, advisory_python, tmp_path):
    cores = tmp_path / "cores"
    cores.mkdir()
    for case, _ in advisory_cores.values():
        os.link(case.core, cores / case.core.name)
    out = tmp_path / "out"
    run = run_cli("batch", str(cores), "--out", str(out), "--python", str(advisory_python), "--jobs", "2", "--timeout", "300")
    assert run.code == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["totals"]["known_groups"] == len(CASES)
    notes = {g["known"]["id"]: g["known"]["note"] for g in summary["groups"] if g.get("known")}
    assert notes == {a: f"{a}, fixed in {fixed}; this process ran {TF_VERSION}" for a, fixed, _ in CASES.values()}
    page = (out / "index.html").read_text()
    for advisory, fixed, _ in CASES.values():
        assert f"{advisory}, fixed in {fixed}; this process ran {TF_VERSION}" in page


def test_triage_of_the_pasted_backtrace_says_the_fix(advisory_cores, tmp_path):
    case, _ = advisory_cores["tfsa_2022_155_tensor_list_resize"]
    paste = tmp_path / "ticket.txt"
    paste.write_text(gdb_backtrace_text(case.exe, case.core))
    run = run_cli("triage", str(paste), "--format", "json")
    assert run.code == 0, run.stderr
    known = run.json["classification"]["known"]
    assert known["id"] == "TFSA-2022-155"
    assert known["note"] == "TFSA-2022-155, fixed in 2.8.4, 2.9.3, 2.10.1, 2.11.0"
    assert known["ran"] == {"tensorflow": None}
