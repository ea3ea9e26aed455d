"""A fleet's statistics on batch records (the arithmetic; the batch on real cores is in
tests/integration/test_batch.py): known-crash matching and its database files, correlations and
their thresholds, --since states, merged baselines, trend bins, and an index over many groups."""

from __future__ import annotations

import re

import pytest

from coreanalyze.base.errors import BadInput
from coreanalyze.batch import breakdown, since, timeline
from coreanalyze.batch.facts import crash_facts
from coreanalyze.batch.store import CoreRecord, record_from_dict
from coreanalyze.batch.summary import build_summary, render_index, render_markdown
from coreanalyze.known import CrashFacts, fixed_note, load_known, version_key

DAY = 86400.0
T0 = 1_760_000_000.0  # 2025-10-09


def record(i: int, signature: str = "SIGSEGV | f #1", *, driver: str | None = None, host: str = "h", day: int = 0,
           fault_kind: str = "null-deref", frames: tuple[str, ...] = ("f",), **versions: str) -> CoreRecord:
    identity = f"{i:064x}"
    return CoreRecord(
        identity=identity, file_identity=identity, path=f"/cores/{host}/core.{i}", status="ok",
        timestamp=T0 + day * DAY, timestamp_source="mtime", host=host, host_source="directory",
        executable="/usr/bin/python3", signature=signature, category="kernel-compute", fault_kind=fault_kind,
        culprit={"function": "f", "module": None}, versions={**versions, **({"driver": driver} if driver else {})},
        frames=list(frames),
    )


# ---------------------------------------------------------------------------------- known crashes


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_known_crashes_match_the_corpus_cases():
    known = load_known()
    lrn = CrashFacts(fault_kind="check-failure", abort_message="tensor_shape.cc:362] Check failed: d < dims() (1 vs. 1)",
                     frames=("tensorflow::TensorShapeBase::dim_size", "tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute"))
    assert known.match(lrn).id == "tf-lrngrad-output-image-rank"
    fft = CrashFacts(fault_kind="abort", abort_message="Assertion failure: no zero-sized FFTs (fft1d_impl.h:2948)",
                     frames=("void ducc0::google::c2r<float>(...)", "tensorflow::FFTCPU<false, true, 1>::DoFFT(tensorflow::OpKernelContext*)"))
    assert known.match(fft).id == "tf-fft-zero-length"
    fork = CrashFacts(fault_kind="hang", signature="hang | fork-after-tensorflow-started | MatMul")
    assert known.match(fork).id == "tf-fork-after-init"
    assert known.match(CrashFacts(gpu_exception="Warp Illegal Address")).id == "cuda-illegal-address"
    assert known.match(CrashFacts(gpu_exception="Device-side assert")).id == "cuda-device-side-assert"
    # The same frames without the abort message, or another fault, are not that crash.
    assert known.match(CrashFacts(fault_kind="null-deref", frames=lrn.frames)) is None
    for entry in known.entries:
        assert entry.url is None or entry.url.startswith("https://")


def test_fixed_in_says_what_this_core_ran(tmp_path):
    path = write(tmp_path, "k.toml", """
[[crash]]
id = "x"
title = "X"
fixed_in = { tensorflow = "2.17.0" }
[crash.match]
frames = ['^Boom$']
""")
    known = load_known([path])
    facts = CrashFacts(frames=("Boom",), versions={"tensorflow": "2.16.1"})
    verdict = known.match(facts).verdict(facts)
    assert verdict["note"] == "fixed in tensorflow 2.17.0, this core ran 2.16.1: upgrading fixes it"
    assert verdict["ran"] == {"tensorflow": "2.16.1"} and verdict["origin"] == str(path)
    assert "regression" in fixed_note("tensorflow", "2.17.0", "2.18.0rc1")
    assert version_key("2.17.0rc1") == (2, 17, 0) and version_key("nightly") is None


def test_a_users_entries_come_first_and_replace_shipped_ones_by_id(tmp_path):
    path = write(tmp_path, "mine.toml", """
[[crash]]
id = "tf-fork-after-init"
title = "our own words for the fork hang"
[crash.match]
signature = '^hang \\| fork-after-tensorflow-started'
[[crash]]
id = "any-check-failure"
title = "every CHECK failure, ours first"
[crash.match]
fault_kind = "check-failure"
""")
    known = load_known([path])
    assert [e.id for e in known.entries][:2] == ["tf-fork-after-init", "any-check-failure"]
    assert [e.id for e in known.entries].count("tf-fork-after-init") == 1
    assert known.match(CrashFacts(fault_kind="hang", signature="hang | fork-after-tensorflow-started")).title == "our own words for the fork hang"
    lrn = CrashFacts(fault_kind="check-failure", abort_message="Check failed: d < dims()", frames=("tensorflow::LRNGradOp<float>::Compute",))
    assert known.match(lrn).id == "any-check-failure"


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("[[crash]]\nid = 'bad-regex'\ntitle = 'broken'\n[crash.match]\nframes = ['(']\n", "crash[1]: match.frames: bad regex"),
        ("[[crash]]\nid = 'no-match'\ntitle = 'nothing to match'\n", "crash[1] ('no-match'): missing key 'match'"),
        ("[[crash]]\nid = 'empty'\ntitle = 'x'\n[crash.match]\n", "crash[1]: needs a [crash.match] table with at least one pattern"),
        ("[[crash]]\nid = 'x'\ntitle = 'x'\nfixd_in = {}\n[crash.match]\nsignature = 'a'\n", "crash[1] ('x'): unknown key 'fixd_in'"),
        ("[[crash]]\nid = 'x'\ntitle = 'x'\n[crash.match]\nframes = [1]\n", "crash[1] ('x').match.frames[1]: expected a string, got an integer (1)"),
        ("[[crash]]\nid = 'x'\ntitle = 'x'\nfixed_in = { tensorflow = 2 }\n[crash.match]\nsignature = 'a'\n", "fixed_in.tensorflow: expected a string"),
        ("[[crash]\n", "invalid TOML"),
        ("[crash]\nid = 'x'\n", "crash: expected an array of tables, got a table"),
    ],
)
def test_a_known_file_that_cannot_be_used_is_one_line_of_bad_input(tmp_path, content, fragment):
    """A fleet's own list with a typo stops the batch before it starts, naming the file and the
    entry, rather than its crashes silently going unrecognized."""
    path = write(tmp_path, "mine.toml", content)
    with pytest.raises(BadInput) as info:
        load_known([path])
    message = str(info.value)
    assert message.startswith(f"--known {path}: ") and fragment in message and "\n" not in message
    with pytest.raises(BadInput, match="no such file"):
        load_known([tmp_path / "missing.toml"])


def test_a_record_carries_what_known_crashes_match_on():
    r = record(1, frames=("LRNGradOp<float>::Compute",), fault_kind="check-failure", tensorflow="2.21.0")
    r.abort_message = "Check failed: d < dims() (1 vs. 1)"
    r.packages = {"tensorflow-cpu": "2.21.0"}
    back = record_from_dict(r.to_dict())
    assert back == r
    facts = crash_facts(back)
    assert facts.versions["tensorflow"] == "2.21.0" and load_known().match(facts).id == "tf-lrngrad-output-image-rank"
    damaged = {**r.to_dict(), "versions": {"python": 3}, "frames": ["ok", 7]}
    assert record_from_dict(damaged).versions == {} and record_from_dict(damaged).frames == ["ok"]
    with pytest.raises(ValueError):
        record_from_dict({**r.to_dict(), "known": "yes"})


# ---------------------------------------------------------------------------------- correlations


def test_correlation_needs_the_stated_count_and_ratio():
    # 18 cores of group A, 17 on driver 535; 315 other cores, 23 of them on 535.
    records = [record(i, "A", driver="535.104" if i < 17 else "550.54") for i in range(18)]
    records += [record(100 + i, f"B{i % 5}", driver="535.104" if i < 23 else "550.54") for i in range(315)]
    summary = build_summary(records)
    group = next(g for g in summary["groups"] if g["signature"] == "A")
    assert group["versions"]["driver"] == [{"value": "535.104", "count": 17}, {"value": "550.54", "count": 1}]
    (c,) = group["correlations"]
    assert (c["attribute"], c["value"], c["in_group"], c["group_size"], c["in_batch"], c["batch_size"]) == ("driver", "535.104", 17, 18, 40, 333)
    assert c["group_share"] == round(17 / 18, 4) and c["batch_share"] == round(40 / 333, 4)
    assert breakdown.correlation_text(c) == "94% of this group (17 of 18) had driver 535.104 vs 12% of all cores (40 of 333)"
    # Below the minimum count, or at a share close to the batch's: nothing is claimed.
    small = build_summary([record(i, "A", driver="535") for i in range(2)] + [record(10 + i, "B", driver="550") for i in range(20)])
    assert all(not g["correlations"] for g in small["groups"])
    even = build_summary([record(i, "A" if i % 2 else "B", driver="535" if i % 3 else "550") for i in range(60)])
    assert all(not g["correlations"] for g in even["groups"])


def test_packages_that_differ_across_the_batch_are_broken_down():
    records = [record(i, "A") for i in range(4)] + [record(10 + i, "B") for i in range(4)]
    for r in records:
        r.packages = {"numpy": "2.0.1" if r.signature == "A" else "1.26.4", "six": "1.16.0"}
    summary = build_summary(records)
    a = next(g for g in summary["groups"] if g["signature"] == "A")
    assert a["packages"] == {"numpy": [{"value": "2.0.1", "count": 4}]}  # six is the same everywhere
    assert [(c["attribute"], c["value"]) for c in a["correlations"]] == [("package:numpy", "2.0.1")]


# ---------------------------------------------------------------------------------- --since


def _baseline(groups: dict[str, list[int]], gone: dict[str, str] | None = None, period_counts: dict[str, int] | None = None) -> dict:
    return {
        "schema": since.BASELINE_SCHEMA,
        "previous": [{"path": "/prev", "last_day": "2025-10-09", "groups": len(groups)}],
        "groups": {sig: {"cores": [f"{i:064x}" for i in ids], "count": len(ids), "period_count": (period_counts or {}).get(sig, len(ids)),
                         "last_seen": "2025-10-09T00:00:00Z"} for sig, ids in groups.items()},
        "gone": {sig: {"count": 1, "last_seen": last} for sig, last in (gone or {}).items()},
    }


def test_since_states():
    baseline = _baseline({"steady": [1, 2], "growing": [3], "lost": [4]}, gone={"back": "2025-09-01T00:00:00Z", "long-gone": "2025-01-01T00:00:00Z"})
    records = [record(1, "steady"), record(2, "steady"), record(5, "steady")]
    records += [record(3, "growing")] + [record(10 + i, "growing") for i in range(3)]
    records += [record(20, "back"), record(21, "new")]
    summary = build_summary(records, baseline=baseline)
    trend = {g["signature"]: g["trend"] for g in summary["groups"]}
    assert trend["steady"]["state"] == "steady" and trend["steady"]["this_period"] == 1
    assert trend["growing"] == {"state": "growing", "this_period": 3, "previous_period": 1,
                                "note": "growing: 3 cores since the previous batch vs 1 in its own period (×3.0)"}
    assert trend["back"]["state"] == "back" and "2025-09-01" in trend["back"]["note"]
    assert trend["new"]["state"] == "new"
    assert [g["signature"] for g in summary["gone"]] == ["lost", "long-gone"]  # latest first, gone ones carried on
    assert summary["since"] == {"previous": baseline["previous"], "new": 1, "growing": 1, "back": 1, "steady": 1, "gone": 2}
    # A shard sees part of the cores: nothing is gone until the shards are merged.
    from coreanalyze.batch.shard import Shard

    assert build_summary(records, shard=Shard(0, 2), baseline=baseline)["gone"] == []
    # Two new cores of a group that had one are not "growing": below the stated minimum.
    two = build_summary([record(3, "growing"), record(30, "growing"), record(31, "growing")], baseline=baseline)
    assert two["groups"][0]["trend"]["state"] == "steady"


def test_baselines_of_shards_count_once_and_of_machines_add_up():
    a = _baseline({"x": [1, 2]}, period_counts={"x": 2})
    assert since.merge_baselines([a, a]) == since.merge_baselines([a])
    b = _baseline({"x": [2, 3], "y": [9]}, gone={"x": "2025-01-01T00:00:00Z"})
    b["previous"][0]["path"] = "/other"
    merged = since.merge_baselines([a, b])
    assert merged["groups"]["x"]["count"] == 3 and merged["groups"]["x"]["period_count"] == 4
    assert "x" not in merged["gone"] and len(merged["previous"]) == 2
    assert since.merge_baselines([]) is None


# ---------------------------------------------------------------------------------- time and the index


def test_days_and_trend_bins():
    assert timeline.per_day([T0, T0 + 60, T0 + DAY, None, 5.0]) == {"2025-10-09": 2, "2025-10-10": 1}
    span = timeline.period(["2025-10-09", "2026-01-01"])
    assert span == {"first_day": "2025-10-09", "last_day": "2026-01-01", "days": 85}
    bins = timeline.trend_bins({"2025-10-09": 2, "2026-01-01": 5}, span)
    assert bins["days_per_bin"] == 2 and len(bins["bins"]) == 43 and bins["bins"][0] == 2 and bins["bins"][-1] == 5


def test_index_and_markdown_over_many_groups_stay_bounded():
    records = [record(i, f"SIGSEGV | f{i % 1500} #x", driver=f"5{i % 3}0.1", host=f"host-{i % 50}", day=i % 40) for i in range(3000)]
    summary = build_summary(records)
    assert summary["totals"]["groups"] == 1500 and summary["period"]["days"] == 40
    page = render_index(summary)
    assert page.count('<div class="g ') == 1500 and page.count('<svg class="trend"') == 1500
    assert "<script" not in page.lower()
    # One CSS rule per sort order and filter choice, built from our own ids only.
    rules = re.findall(r"body:has\(#([\w-]+) option\[value=\"(\w+)\"\]:checked\)", page)
    assert len(rules) < 300 and all(re.fullmatch(r"f\d+v\d+|last|first|growth|name", value) for _, value in rules)
    assert 'id="filter-host"' in page and 'id="filter-driver"' in page
    assert len(page) < 40 << 20
    text = render_markdown(summary)
    assert text.count("\n| ") == 1501 and "1300 more groups in summary.json" in text


def test_a_record_names_its_shrunk_core_only_inside_the_batch_layout():
    r = record(1)
    r.shrunk, r.shrunk_size = "shrunk/core.1-0000000000000001.core.zst", 123_456
    assert record_from_dict(r.to_dict()) == r
    # merge copies this path from another machine's batch: it never leaves shrunk/
    for foreign in ("../../etc/passwd", "/etc/passwd", "shrunk/../x.core.zst", "shrunk/.hidden.core.zst", "reports/x.html"):
        with pytest.raises(ValueError):
            record_from_dict({**r.to_dict(), "shrunk": foreign})
    summary = build_summary([r, record(2)])
    example = summary["groups"][0]["example"]
    assert (example["shrunk"], example["shrunk_size"]) == (r.shrunk, 123_456)
    assert 'href="shrunk/core.1-0000000000000001.core.zst"' in render_index(summary)
    assert "core to attach: `shrunk/core.1-0000000000000001.core.zst` (0" in render_markdown(summary)
