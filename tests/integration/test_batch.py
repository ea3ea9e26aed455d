"""`coreanalyze batch` and `merge` on real cores: grouping, duplicates, systemd-coredump files
(compressed, with extended attributes), a corrupt file, SIGKILL + --resume, Ctrl-C, shards."""

from __future__ import annotations

import importlib.metadata
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import lz4.frame
import pytest
import zstandard
from support.batchcorpus import BOOT_ID, DIVZERO_USEC, REPORT_NAME, UD2_USEC, Corpus, _iso, _systemd_name
from support.clirun import REPO, run_cli
from support.corecache import C_CRASHERS
from support.coregen import run_to_core
from support.procs import assert_gone, descendants

from coreanalyze.base.errors import BadInput
from coreanalyze.batch.identity import content_identity
from coreanalyze.batch.inputs import decompress_to, describe, discover, parse_systemd_name
from coreanalyze.batch.shard import parse_shard, shard_of


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, cores) -> Corpus:
    return Corpus(tmp_path_factory.mktemp("batch-corpus"), cores)


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _comparable(summary: dict) -> dict:
    """What two batches over the same cores must agree on."""
    return {"totals": summary["totals"], "groups": summary["groups"], "failed": summary["failed"]}


def _jsonl(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cores.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def full_batch(corpus, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("batch-full") / "out"
    run = run_cli("batch", *corpus.arguments, "--out", str(out), "--jobs", "2", "--timeout", "120")
    assert run.code == 0, run.stderr
    assert "index: " in run.stdout
    return out, _summary(out)


def _group(summary: dict, needle: str) -> dict:
    found = [g for g in summary["groups"] if needle in g["signature"]]
    assert len(found) == 1, (needle, [g["signature"] for g in summary["groups"]])
    return found[0]


def test_batch_groups_real_cores(corpus, full_batch):
    out, summary = full_batch
    totals = summary["totals"]
    assert totals == {"files": 9, "cores": 8, "analyzed": 7, "partial": 0, "failed": 1, "duplicates": 1, "groups": 5, "known_groups": 0, "without_time": 0}

    # Sorted by count: the three null-pointer crashes first.
    null_group = summary["groups"][0]
    assert null_group["count"] == 3
    assert null_group["fault_kind"] == "null-deref"
    assert null_group["culprit"]["function"] == "store_result"
    assert [g["count"] for g in summary["groups"]] == [3, 1, 1, 1, 1]
    assert len(set(null_group["cores"])) == 3  # three different cores, one crash

    kinds = {g["fault_kind"] for g in summary["groups"]}
    assert kinds == {"null-deref", "heap-corruption", "divide-by-zero", "illegal-instruction", "sent-signal"}

    divzero = _group(summary, "SIGFPE")
    ud2 = _group(summary, "SIGILL")
    if corpus.xattrs:
        # Host and crash time from systemd's attributes.
        assert divzero["hosts"] == [{"host": "web-1", "count": 1, "from": "xattr"}]
        assert ud2["hosts"] == [{"host": "web-2", "count": 1, "from": "xattr"}]
        assert divzero["first_seen"] == divzero["last_seen"] == _iso(DIVZERO_USEC)
        assert divzero["time_sources"] == {"xattr": 1}
    else:
        # Without attributes: the directory the core was collected in.
        assert divzero["hosts"] == [{"host": "coredump", "count": 1, "from": "directory"}]
    # Without attributes, the systemd file name still gives the crash time.
    assert ud2["first_seen"] == _iso(UD2_USEC)
    assert ud2["per_day"] == {_iso(UD2_USEC)[:10]: 1}
    # Cores without attributes: the first directory below the one the batch was given, their mtime.
    assert null_group["hosts"] == [{"host": f"run{i}", "count": 1, "from": "directory"} for i in range(3)]
    assert null_group["time_sources"] == {"mtime": 3}
    assert null_group["first_seen"] <= null_group["last_seen"]
    assert sum(null_group["per_day"].values()) == 3 and sum(null_group["chart"]["bins"]) == 3
    assert summary["period"]["first_day"] == _iso(UD2_USEC)[:10] == min(g["chart"]["first_day"] for g in summary["groups"])
    # The three null-pointer cores are the only ones of their program: a correlation with counts.
    assert null_group["versions"]["executable"] == [{"value": str(corpus.null_program), "count": 3}]
    assert null_group["correlations"] == [{
        "attribute": "executable", "value": str(corpus.null_program), "in_group": 3, "group_size": 3, "group_share": 1.0,
        "in_batch": 3, "batch_size": 7, "batch_share": 0.4286, "ratio": 2.33,
    }]
    assert all(not g["correlations"] for g in summary["groups"][1:])  # one core is no evidence
    assert summary["thresholds"]["correlation_min_count"] == 3 and summary["since"] is None and summary["gone"] == []

    # The corrupt file is reported with its reason; nothing else was lost to it.
    assert [f["path"] for f in summary["failed"]] == [str(corpus.corrupt)]
    assert summary["failed"][0]["reason"]

    # One line per file for other tools; the xz copy of the double-free core is its duplicate.
    lines = {Path(line["path"]): line for line in _jsonl(out)}
    assert set(lines) == set(corpus.files)
    copy = lines[corpus.double_free_copy]
    assert copy["status"] == "duplicate" and copy["duplicate_of"] == str(corpus.double_free)
    assert copy["identity"] == lines[corpus.double_free]["identity"]
    assert lines[corpus.divzero]["compression"] == "zst" and lines[corpus.ud2]["compression"] == "lz4"
    assert lines[corpus.corrupt]["status"] == "failed"

    # A report per analyzed core, HTML and JSON, under sanitized names that never collide.
    analyzed = [line for line in lines.values() if line["status"] == "ok"]
    names = [line["report_html"] for line in analyzed] + [line["report_json"] for line in analyzed]
    assert len(names) == len(set(names)) == 14
    for line in analyzed:
        assert REPORT_NAME.match(line["report_html"]) and REPORT_NAME.match(line["report_json"])
        report = json.loads((out / line["report_json"]).read_text())
        assert report["classification"]["signature"] == line["signature"]
        assert report["core"]["path"] == line["path"]  # the original file, not a decompressed copy
        assert (out / line["report_html"]).read_text().startswith("<!DOCTYPE html>")
    for group in summary["groups"]:
        assert (out / group["example"]["report_html"]).is_file()


def test_batch_markdown_carries_the_summary_numbers(full_batch):
    out, summary = full_batch
    text = (out / "summary.md").read_text()
    assert text.startswith("# 5 crash groups in 8 cores\n")
    null_group = summary["groups"][0]
    day, n = next(iter(null_group["per_day"].items()))
    assert f"- per day: {day} {n}" in text
    assert "- correlation: 100% of this group \\(3 of 3\\) had executable" in text
    assert "vs 43% of all cores \\(3 of 7\\)" in text
    assert "- hosts: run0 ×1 (directory), run1 ×1 (directory), run2 ×1 (directory)" in text
    assert "core.4242" in text


def test_batch_index_page(full_batch):
    out, summary = full_batch
    page = (out / "index.html").read_text()
    assert "default-src 'none'; style-src 'unsafe-inline'" in page
    assert "<script" not in page.lower()
    assert "http://" not in page and "https://" not in page
    assert page.count('<svg class="trend"') == len(summary["groups"])  # a trend chart per group
    # Groups appear in the summary's order, each with a link to its example report.
    positions = [page.index(f'href="{g["example"]["report_html"]}"') for g in summary["groups"]]
    assert positions == sorted(positions)
    assert "core.4242" in page and "5 crash groups in 8 cores" in page


def test_signature_matches_single_core_analysis(corpus, full_batch):
    out, summary = full_batch
    run = run_cli(str(corpus.null_cores[0]), "--format", "json", "-o", "-")
    assert run.code == 0, run.stderr
    assert summary["groups"][0]["signature"] == run.json["classification"]["signature"]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _start_batch(arguments: list[str], out: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-m", "coreanalyze", "batch", *arguments, "--out", str(out), "--jobs", "1", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # A test run started in the background inherits SIGINT ignored, and Python then never
        # installs its Ctrl-C handler: give the batch the disposition a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for_first_result(proc: subprocess.Popen, out: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "results").is_dir() and any(p.suffix == ".json" and not p.name.startswith(".") for p in (out / "results").iterdir()):
            return
        time.sleep(0.02)
    pytest.fail(f"the batch produced no result (exit {proc.poll()}): {proc.stderr.read() if proc.poll() is not None else ''}")


def _results(out: Path) -> list[Path]:
    return [p for p in (out / "results").iterdir() if p.suffix == ".json" and not p.name.startswith(".")]


def test_sigkill_then_resume_loses_nothing_and_counts_nothing_twice(corpus, full_batch, tmp_path):
    out = tmp_path / "out"
    proc = _start_batch(corpus.arguments, out)
    _wait_for_first_result(proc, out)
    workers = descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    kept = len(_results(out))
    assert 1 <= kept < len(corpus.files), "the batch should have been killed mid-run"
    # The workers (and their gdb) do not outlive the batch.
    assert_gone(workers)

    # Without --resume the directory is protected; with it the batch continues.
    refused = run_cli("batch", *corpus.arguments, "--out", str(out))
    assert refused.code == 2 and "--resume" in refused.stderr
    resumed = run_cli("batch", *corpus.arguments, "--out", str(out), "--resume", "--jobs", "2")
    assert resumed.code == 0, resumed.stderr
    assert f"{kept} already done" in resumed.stdout
    assert _comparable(_summary(out)) == _comparable(full_batch[1])
    assert len(_jsonl(out)) == len(corpus.files)
    assert not [p for p in out.rglob(".*") if ".tmp-" in p.name]

    # A second resume finds everything done and changes nothing.
    again = run_cli("batch", *corpus.arguments, "--out", str(out), "--resume")
    assert again.code == 0 and f"{len(corpus.files)} already done" in again.stdout
    assert _comparable(_summary(out)) == _comparable(full_batch[1])


def test_ctrl_c_stops_cleanly_and_keeps_what_is_done(corpus, full_batch, tmp_path):
    out = tmp_path / "out"
    proc = _start_batch(corpus.arguments, out)
    _wait_for_first_result(proc, out)
    workers = descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr and "--resume" in stderr
    assert_gone(workers)
    # What was done is summarized already, and a resume completes the same batch.
    partial = _summary(out)
    assert 1 <= partial["totals"]["files"] == len(_results(out))
    resumed = run_cli("batch", *corpus.arguments, "--out", str(out), "--resume")
    assert resumed.code == 0, resumed.stderr
    assert _comparable(_summary(out)) == _comparable(full_batch[1])


def test_shards_merged_equal_one_batch(corpus, full_batch, tmp_path):
    shard_dirs = []
    seen: list[str] = []
    for index in range(2):
        out = tmp_path / f"shard{index}"
        run = run_cli("batch", *corpus.arguments, "--out", str(out), "--shard", f"{index}/2")
        assert run.code == 0, run.stderr
        assert _summary(out)["shard"] == {"index": index, "count": 2}
        seen += [line["path"] for line in _jsonl(out)]
        shard_dirs.append(out)
    assert sorted(seen) == sorted(str(p) for p in corpus.files)  # each file in exactly one shard

    merged = tmp_path / "merged"
    run = run_cli("merge", *map(str, shard_dirs), "--out", str(merged))
    assert run.code == 0, run.stderr
    assert _comparable(_summary(merged)) == _comparable(full_batch[1])
    for group in _summary(merged)["groups"]:
        assert (merged / group["example"]["report_html"]).is_file()
    # Merging the same shards again counts nothing twice.
    run = run_cli("merge", *map(str, shard_dirs), "--out", str(merged))
    assert run.code == 0, run.stderr
    assert _comparable(_summary(merged)) == _comparable(full_batch[1])


def test_a_core_over_its_time_is_killed_and_recorded(corpus, tmp_path):
    """The batch's own watchdog: a worker that overruns its time is killed (with its gdb) and
    the core recorded as timed out; the batch goes on. No real analysis (worker start-up
    included) fits in 10 ms, so every core here overruns."""
    from coreanalyze.batch import BatchOptions, run_batch

    out = tmp_path / "out"
    started: set[int] = set()
    result = run_batch(
        [str(corpus.plain_dir / "run0"), str(corpus.killed)],
        BatchOptions(out=out, jobs=2, timeout=0.01, grace=0.0),
        on_record=lambda record: started.update(descendants(os.getpid())),
    )
    # multiprocessing's resource tracker lives as long as this (test) process: not ours to end.
    started = {p for p in started if b"resource_tracker" not in _cmdline(p)}
    assert result.this_run == {"failed": 2}
    assert {f["path"] for f in result.summary["failed"]} == {str(corpus.null_cores[0]), str(corpus.killed)}
    assert all(f["reason"].startswith("timed out") for f in result.summary["failed"])
    assert_gone(started)


def test_identical_broken_files_are_one_failure(tmp_path):
    (tmp_path / "in").mkdir()
    broken = b"\x28\xb5\x2f\xfd" + b"not a zstd frame" * 10
    for pid in (1, 2):
        (tmp_path / "in" / _systemd_name("app", pid, DIVZERO_USEC, "zst")).write_bytes(broken)
    run = run_cli("batch", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--jobs", "1")
    assert run.code == 0, run.stderr
    summary = _summary(tmp_path / "out")
    assert (summary["totals"]["failed"], summary["totals"]["duplicates"]) == (1, 1)
    assert "corrupt zst stream" in summary["failed"][0]["reason"]
    assert len(_jsonl(tmp_path / "out")) == 2


# ---------------------------------------------------------------------------------- inputs


def test_discovery_takes_cores_and_leaves_other_files(corpus):
    found = {Path(c.path) for c in discover(corpus.arguments)}
    assert found == set(corpus.files)
    by_path = {Path(c.path): c for c in discover(corpus.arguments)}
    assert by_path[corpus.divzero].compression == "zst"
    assert by_path[corpus.ud2].compression == "lz4"
    assert by_path[corpus.double_free_copy].compression == "xz"
    assert by_path[corpus.divzero].systemd.comm == "divzero"
    assert by_path[corpus.ud2].timestamp == (UD2_USEC / 1e6, "xattr" if corpus.xattrs else "filename")
    if corpus.xattrs:
        assert by_path[corpus.divzero].xattrs["hostname"] == "web-1"
        assert by_path[corpus.divzero].pid == int(by_path[corpus.divzero].xattrs["pid"])


def test_identity_follows_content_not_name(corpus, tmp_path):
    a, b, c = (content_identity(p) for p in corpus.null_cores)
    assert len({a, b, c}) == 3  # same program, same crash, different cores
    copy = tmp_path / "renamed"
    copy.write_bytes(corpus.null_cores[0].read_bytes())
    assert content_identity(copy) == a
    plain = tmp_path / "double_free.core"
    decompress_to(describe(str(corpus.double_free_copy)), str(plain))
    assert plain.read_bytes() == corpus.double_free.read_bytes()
    assert content_identity(plain) == content_identity(corpus.double_free)
    assert shard_of(a, 2) == shard_of(a, 2) and shard_of(a, 1) == 0


def test_truncated_and_oversized_streams_are_bad_input(corpus, tmp_path):
    data = corpus.null_cores[0].read_bytes()
    for suffix, compressed in (
        ("zst", zstandard.ZstdCompressor().compress(data)),
        ("lz4", lz4.frame.compress(data)),
        ("xz", lzma.compress(data, preset=1)),
    ):
        cut = tmp_path / f"core.x.0.{BOOT_ID}.1.2.{suffix}"
        cut.write_bytes(compressed[: len(compressed) // 2])
        with pytest.raises(BadInput, match="corrupt|ended"):
            decompress_to(describe(str(cut)), str(tmp_path / "out"))
        whole = tmp_path / f"core.y.0.{BOOT_ID}.1.2.{suffix}"
        whole.write_bytes(compressed)
        with pytest.raises(BadInput, match="decompresses to more than"):
            decompress_to(describe(str(whole)), str(tmp_path / "out"), limit=1 << 20)


def test_systemd_names():
    name = parse_systemd_name(f"core.python3\\x2e11.1000.{BOOT_ID}.4321.1700000000123456.zst")
    assert name is not None
    assert (name.comm, name.uid, name.pid, name.usec, name.compression) == ("python3.11", 1000, 4321, 1700000000123456, "zst")
    assert parse_systemd_name(f"core.a.b.1000.{BOOT_ID}.1.2").comm == "a.b"
    assert parse_systemd_name(f"core.x.1000.{BOOT_ID}.1.2.gz") is None
    assert parse_systemd_name("core.1234") is None


def test_shard_spec():
    assert parse_shard("1/4").index == 1 and parse_shard(" 0 / 1 ").count == 1
    for bad in ("4/4", "1/0", "a/b", "-1/2", "1"):
        with pytest.raises(BadInput):
            parse_shard(bad)


# ---------------------------------------------------------------------------------- bad input


def test_bad_batch_input_is_one_line_and_exit_2(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no cores here\n")
    cases = [
        (["batch", str(tmp_path / "missing"), "--out", str(tmp_path / "o1")], "no such file"),
        (["batch", str(tmp_path / "nothing-*.core"), "--out", str(tmp_path / "o2")], "matches no file"),
        (["batch", str(empty), "--out", str(tmp_path / "o3")], "no core files found"),
        (["batch", str(empty), "--out", str(tmp_path / "o4"), "--shard", "2/2"], "--shard"),
        (["merge", str(empty), "--out", str(tmp_path / "o5")], "not a batch output directory"),
        (["batch", str(empty), "--out", str(tmp_path / "o6"), "--python", str(tmp_path / "nope")], "--python"),
        (["batch", str(empty), "--out", str(tmp_path / "o7"), "--gdb", str(tmp_path / "no-gdb")], "gdb not found"),
    ]
    for args, message in cases:
        run = run_cli(*args)
        assert run.code == 2, (args, run.stderr)
        assert message in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr


# ---------------------------------------------------------------------------------- TensorFlow


@pytest.mark.tf
@pytest.mark.slow
def test_batch_with_tensorflow_cores(tf_cores, cores, tmp_path):
    """Two TensorFlow crash kinds (~300 MB cores) next to a C crash, plus one TF core again as a
    zstd file named the systemd way: three groups, the compressed copy counted once."""
    check_failure = tf_cores.get("kernel_check_failure")
    custom_op = tf_cores.get("kernel_compute_segv")
    c_case = cores.c_crash("null_thread")
    inputs = tmp_path / "in"
    inputs.mkdir()
    for case, name in ((check_failure, "core.1001"), (custom_op, "core.1002"), (c_case, "core.1003")):
        os.symlink(case.core, inputs / name)
    compressed = inputs / _systemd_name("python3", 1001, DIVZERO_USEC, "zst")
    with open(check_failure.core, "rb") as src, open(compressed, "wb") as dst:
        zstandard.ZstdCompressor(level=1).copy_stream(src, dst)

    out = tmp_path / "out"
    run = run_cli("batch", str(inputs), "--out", str(out), "--jobs", "2", timeout=1800)
    assert run.code == 0, run.stderr
    summary = _summary(out)
    assert summary["totals"]["groups"] == 3 and summary["totals"]["duplicates"] == 1
    assert summary["totals"]["failed"] == 0 and summary["totals"]["partial"] == 0
    by_kind = {(g["category"], g["fault_kind"]): g for g in summary["groups"]}
    check = by_kind[("kernel-compute", "check-failure")]
    assert check["count"] == 1
    # LRNGrad's CHECK failure is a known crash; the versions are the ones this interpreter ran.
    assert check["known"]["id"] == "tf-lrngrad-output-image-rank" and check["known"]["url"].startswith("https://github.com/tensorflow/")
    assert check["versions"]["tensorflow"] == [{"value": importlib.metadata.version("tensorflow-cpu"), "count": 1}]
    assert check["versions"]["python"][0]["value"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    segv = [g for (category, kind), g in by_kind.items() if category == "kernel-compute" and kind != "check-failure"]
    assert len(segv) == 1 and segv[0]["signal"] == "SIGSEGV"
    lines = {Path(line["path"]).name: line for line in _jsonl(out)}
    assert lines[compressed.name]["status"] == "duplicate"
    assert lines[compressed.name]["identity"] == lines["core.1001"]["identity"]
    assert lines[compressed.name]["duplicate_of"] == str(inputs / "core.1001")
    compressed.unlink()  # tens of MB; pytest keeps recent temporary directories


# ---------------------------------------------------------------------------------- a fleet's days


KNOWN_STORE_RESULT = """
[[crash]]
id = "store-result-null"
title = "store_result writes through a NULL slot"
url = "https://example.org/issues/1"
fixed_in = { python = "3.99" }
advice = "Check the slot before storing."
[crash.match]
fault_kind = "null-deref"
frames = ['^store_result$']
"""


def _by_signature(summary: dict) -> dict[str, dict]:
    return {g["signature"]: g for g in summary["groups"]}


def test_since_marks_new_steady_gone_and_back_and_known_crashes_show(corpus, full_batch, tmp_path):
    """Three days of a fleet on real cores: the previous batch, today's with --since and a
    fleet's own known-crash file, then a day where a gone crash is back."""
    signature = {Path(line["path"]): line["signature"] for line in _jsonl(full_batch[0])}
    null_sig, free_sig = signature[corpus.null_cores[0]], signature[corpus.double_free]
    divzero_sig, killed_sig = signature[corpus.divzero], signature[corpus.killed]

    before = tmp_path / "day1"
    run = run_cli("batch", str(corpus.double_free), str(corpus.divzero), str(corpus.killed), "--out", str(before), "--jobs", "2")
    assert run.code == 0, run.stderr

    known = tmp_path / "known.toml"
    known.write_text(KNOWN_STORE_RESULT)
    # A damaged known-crash file stops the batch before it starts: one line, exit 2, nothing written.
    damaged = tmp_path / "damaged.toml"
    damaged.write_text("[[crash]\nid = \n")
    refused = tmp_path / "refused"
    run = run_cli("batch", str(corpus.double_free), "--out", str(refused), "--known", str(known), "--known", str(damaged))
    assert run.code == 2 and run.stderr.count("\n") == 1 and f"--known {damaged}: invalid TOML" in run.stderr
    assert not refused.exists()
    today = tmp_path / "day2"
    run = run_cli(
        "batch", str(corpus.plain_dir / "run0"), str(corpus.plain_dir / "run1"), str(corpus.plain_dir / "run2"),
        str(corpus.double_free), str(corpus.ud2), "--out", str(today), "--jobs", "2",
        "--since", str(before), "--known", str(known),
    )
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "since the previous batch: 2 new, 0 growing, 0 back, 1 steady, 2 gone" in run.stdout
    assert "[new, known: store-result-null]" in run.stdout
    summary = _summary(today)
    groups = _by_signature(summary)
    assert groups[null_sig]["trend"]["state"] == "new" and groups[null_sig]["trend"]["this_period"] == 3
    assert groups[free_sig]["trend"] == {"state": "steady", "this_period": 0, "previous_period": 1, "note": groups[free_sig]["trend"]["note"]}
    assert summary["since"]["new"] == 2 and summary["since"]["steady"] == 1 and summary["since"]["gone"] == 2
    assert {g["signature"] for g in summary["gone"]} == {divzero_sig, killed_sig}

    # The fleet's own known crash: in the group, the per-core JSON and HTML reports, the index and summary.md.
    verdict = groups[null_sig]["known"]
    assert verdict["id"] == "store-result-null" and verdict["cores"] == 3
    assert verdict["note"] == "fixed in python 3.99; this core's python version is unknown"
    assert summary["totals"]["known_groups"] == 1 and groups[free_sig]["known"] is None
    report = json.loads((today / groups[null_sig]["example"]["report_json"]).read_text())
    assert report["classification"]["known"]["title"] == "store_result writes through a NULL slot"
    assert report["classification"]["advice"][0].startswith("Known crash: store_result writes through a NULL slot (https://example.org/issues/1)")
    assert "Known crash: store_result writes through a NULL slot" in (today / groups[null_sig]["example"]["report_html"]).read_text()
    page = (today / "index.html").read_text()
    assert '<span class="badge known"' in page and '<a href="https://example.org/issues/1" rel="noreferrer">' in page
    assert page.count('<span class="badge new"') == 2 and 'id="gone"' in page
    text = (today / "summary.md").read_text()
    assert "**Known crash:** store\\_result writes through a NULL slot" in text
    assert "Since the previous batch: 2 new, 0 growing, 0 back, 1 steady, 2 gone" in text

    # A merge (here of one batch into a new directory) keeps the baseline and the known crash.
    merged = tmp_path / "merged"
    run = run_cli("merge", str(today), "--out", str(merged))
    assert run.code == 0, run.stderr
    assert _comparable(_summary(merged)) == _comparable(summary) and _summary(merged)["gone"] == summary["gone"]

    # The day after: the divide-by-zero crash, gone today, is back.
    after = tmp_path / "day3"
    run = run_cli("batch", str(corpus.divzero), "--out", str(after), "--since", str(today))
    assert run.code == 0, run.stderr
    summary = _summary(after)
    assert summary["groups"][0]["trend"]["state"] == "back"
    assert {g["signature"] for g in summary["gone"]} == {null_sig, free_sig, signature[corpus.ud2], killed_sig}


def test_since_needs_a_batch_directory(tmp_path, corpus):
    run = run_cli("batch", str(corpus.killed), "--out", str(tmp_path / "o"), "--since", str(tmp_path))
    assert run.code == 2 and "--since" in run.stderr and "summary.json" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_gpu_cores_carry_their_driver_cuda_and_python(gpu_crash, gpu_device_cores, tmp_path):
    """Two real GPU-process cores of one machine (a CUDA driver thread's abort, a SIGSEGV in the
    driver's copy of a wild host pointer): the versions each ran, read from what they mapped."""
    inputs = tmp_path / "gpu-7"
    inputs.mkdir()
    os.symlink(gpu_crash.core, inputs / "core.464")
    os.symlink(gpu_device_cores("memcpy_segv"), inputs / "core.1")
    out = tmp_path / "out"
    run = run_cli("batch", str(inputs), "--out", str(out), "--jobs", "1", "--sysroot", str(gpu_crash.sysroot), timeout=900)
    assert run.code == 0, run.stderr
    summary = _summary(out)
    assert summary["totals"]["analyzed"] + summary["totals"]["partial"] == 2 and summary["totals"]["groups"] == 2
    for line in _jsonl(out):
        assert line["versions"]["driver"] == "580.159.04" and line["versions"]["python"] == "3.12.3"
        assert line["host"] == "gpu-7" and line["host_source"] == "directory"
    for group in summary["groups"]:
        assert group["versions"]["driver"] == [{"value": "580.159.04", "count": 1}]
        assert not group["correlations"]  # every core ran that driver: nothing singles a group out
    assert any(line["versions"].get("cuda") == "13" for line in _jsonl(out))  # libnvrtc.so.13 of the cupy run


def test_a_containers_hostname_names_its_host(cores, tmp_path):
    """A process with HOSTNAME in its environment (a container's, a pod's) is counted on that
    host; the same program without it on the directory it was collected in."""
    first = cores.c_crash("null_thread")
    _, _, sig = C_CRASHERS["null_thread"]
    pod = run_to_core("null_thread-pod", [str(first.exe)], tmp_path / "run", env={"HOSTNAME": "trainer-7b9f"}, kill_after_ready=sig)
    inputs = tmp_path / "collected"
    inputs.mkdir()
    shutil.copy(pod.core, inputs / "core.1")
    # The tests' own environment decides whether a plain run has HOSTNAME: only without it is there a bare case.
    bare = None if "HOSTNAME" in os.environ else run_to_core("null_thread-bare", [str(first.exe)], tmp_path / "run-bare", kill_after_ready=sig)
    if bare is not None:
        shutil.copy(bare.core, inputs / "core.2")
    out = tmp_path / "out"
    run = run_cli("batch", str(inputs), "--out", str(out), "--jobs", "1")
    assert run.code == 0, run.stderr
    hosts = {Path(line["path"]).name: (line["host"], line["host_source"]) for line in _jsonl(out)}
    assert hosts["core.1"] == ("trainer-7b9f", "environment")
    if bare is not None:
        assert hosts["core.2"] == ("collected", "directory")


def test_a_core_without_a_plausible_time_is_said_and_left_out_of_the_days(corpus, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(corpus.killed, inputs / "core.7")
    os.utime(inputs / "core.7", (0, 0))  # a copy that reset the file's time: 1970
    out = tmp_path / "out"
    run = run_cli("batch", str(inputs), "--out", str(out), "--jobs", "1")
    assert run.code == 0, run.stderr
    assert "1 cores without a plausible crash time" in run.stdout
    summary = _summary(out)
    assert summary["totals"]["without_time"] == 1 and summary["period"] is None
    (group,) = summary["groups"]
    assert group["first_seen"] is None and group["per_day"] == {} and group["chart"] is None
    assert "no times" in (out / "index.html").read_text()
