"""The parts of `coreanalyze watch` that need no core: the journal's formats, containers from
control groups, sizes, the attempts file, records with the watch fields, the arrival rules for
a file another process holds open (real /proc), known crashes and the upstream block of a
triaged TensorFlow trace."""

from __future__ import annotations

import json
import os
import time

import pytest
from support.paths import DATA

from coreanalyze.base.errors import BadInput
from coreanalyze.batch.store import BatchStore, CoreRecord, record_from_dict
from coreanalyze.watch import journal
from coreanalyze.watch.arrival import Arrivals, open_for_writing
from coreanalyze.watch.coredump import container_of
from coreanalyze.watch.limits import parse_size
from coreanalyze.watch.state import WatchState

ID = "ab" * 32


def test_export_format_text_and_binary_fields_and_only_coredump_entries():
    cmdline = b"python train.py\n--epochs 3"
    data = (
        b"__CURSOR=s=1\nMESSAGE_ID=0123\nMESSAGE=other\n\n"
        b"MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1\nCOREDUMP_UNIT=trainer.service\n"
        b"COREDUMP_CMDLINE\n" + len(cmdline).to_bytes(8, "little") + cmdline + b"\n"
        b"COREDUMP_ENVIRON=SECRET=1\nCOREDUMP_FILENAME=/var/lib/systemd/coredump/core.a.0.x.7.9.zst\n\n"
    )
    (entry,) = journal.coredump_entries(data)
    assert entry["COREDUMP_UNIT"] == "trainer.service" and entry["COREDUMP_CMDLINE"] == cmdline.decode()
    assert "COREDUMP_ENVIRON" not in entry  # only the fields the record reads
    assert journal.entry_for([entry], "/mnt/host/core.a.0.x.7.9.zst", None, None) is entry
    assert journal.entry_for([entry], "/mnt/host/core.b", 7, 9) is None


def test_json_lines_with_byte_arrays_and_matching_by_pid_and_time():
    lines = [
        {"MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1", "COREDUMP_PID": "42", "COREDUMP_TIMESTAMP": "1000",
         "COREDUMP_CGROUP": list(b"/system.slice/x.service"), "COREDUMP_UNIT": ["a.service", "b.service"]},
        {"MESSAGE_ID": "elsewhere"},
    ]  # fmt: skip
    entries = journal.coredump_entries("\n".join(json.dumps(x) for x in lines).encode() + b"\nnot json\n")
    assert len(entries) == 1
    entry = journal.entry_for(entries, "/x/core.42", 42, 1000)
    assert entry["COREDUMP_CGROUP"] == "/system.slice/x.service" and entry["COREDUMP_UNIT"] == "a.service"


@pytest.mark.parametrize(
    ("cgroup", "container"),
    [
        (f"/system.slice/docker-{ID}.scope", f"docker:{ID[:12]}"),
        (f"/kubepods.slice/kubepods-burstable.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope", f"containerd:{ID[:12]}"),
        (f"/machine.slice/libpod-{ID}.scope/container", f"podman:{ID[:12]}"),
        ("/machine.slice/systemd-nspawn@build.service/payload", "nspawn:build"),
        ("/system.slice/trainer.service", None),
    ],
)
def test_containers_from_control_groups(cgroup, container):
    assert container_of(cgroup) == container


def test_sizes():
    assert parse_size("8G", "--x") == 8 << 30 and parse_size("64k", "--x") == 64 << 10 and parse_size("512MiB", "--x") == 512 << 20
    assert parse_size("1000", "--x") == 1000
    for bad in ("lots", "0", "-1G"):
        with pytest.raises(BadInput):
            parse_size(bad, "--x")


def test_attempts_survive_a_restart_and_a_clean_stop_does_not_count(tmp_path):
    state = WatchState(tmp_path)
    state.started("a", "/c/a")
    state.started("b", "/c/b")
    state.finished("b")
    again = WatchState(tmp_path)  # the watcher died: what it had in hand counts
    assert again.count("a") == 1 and again.count("b") == 0
    again.started("a", "/c/a")
    again.interrupted()  # SIGTERM: this start does not count against the core
    assert WatchState(tmp_path).count("a") == 1
    (tmp_path / "watch-state.json").write_text("{damaged")
    assert WatchState(tmp_path).count("a") == 0


def test_records_with_watch_fields_round_trip_and_bad_paths_are_refused(tmp_path):
    record = CoreRecord(identity=ID, file_identity=ID, path="/c/core", status="ok", kept="full", kept_core="kept/core-abab.core",
                        coredump={"unit": "trainer.service", "container": "docker:abababababab"})  # fmt: skip
    store = BatchStore(tmp_path)
    store.prepare(resume=True)
    store.write(record)
    assert store.load() == [record]
    old = record.to_dict()
    for name in ("kept", "kept_core", "kept_gpu_core", "coredump"):
        old.pop(name)
    assert record_from_dict(old).kept is None  # a record written before these fields
    for field, value in (("kept_core", "../../etc/passwd"), ("kept", "everything")):
        with pytest.raises(ValueError):
            record_from_dict({**record.to_dict(), field: value})


def test_a_file_held_open_for_writing_is_not_taken_until_closed(tmp_path):
    watched = tmp_path / "in"
    watched.mkdir()
    core = watched / "core.123"
    arrivals = Arrivals([str(watched)], [], settle=0.0)
    with open(core, "wb") as f:
        f.write(b"not a whole ELF core")
        f.flush()
        assert open_for_writing({str(core)}) == {str(core)}
        for _ in range(3):
            assert arrivals.scan() == []
            time.sleep(0.01)
    assert arrivals.scan() == [(str(core), str(watched))]
    arrivals.finished(str(core))
    assert arrivals.scan() == []
    os.utime(core, ns=(1, 1))  # changed: looked at again once it settles
    assert arrivals.scan() == []
    assert arrivals.scan() == [(str(core), str(watched))]


def test_hidden_files_are_never_taken(tmp_path):
    (tmp_path / ".#core.python3.0.abc.1.2.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    arrivals = Arrivals([str(tmp_path)], [], settle=0.0)
    assert arrivals.scan() == [] and arrivals.scan() == []


def test_triage_matches_known_crashes_and_fills_the_upstream_form_for_a_new_one():
    from coreanalyze.known import load_known
    from coreanalyze.known.onreport import recognize
    from coreanalyze.render import render
    from coreanalyze.triage import triage_text

    known = triage_text((DATA / "triage" / "tf_check_failure_lrngrad.txt").read_text(), "lrngrad.txt")
    assert recognize(known, load_known())["id"] == "tf-lrngrad-output-image-rank"
    assert known.classification.advice[0].startswith("Known crash: ")
    assert "Report it upstream" not in render(known, "markdown")
    assert json.loads(render(known, "json"))["classification"]["known"]["id"] == "tf-lrngrad-output-image-rank"

    new = triage_text((DATA / "traces" / "custom_op_compute_segv.txt").read_text(), "custom_op.txt")
    assert recognize(new, load_known()) is None
    text = render(new, "markdown")
    assert "Report it upstream" in text
    for label in ("Issue Type", "Source", "Tensorflow Version", "Custom Code", "OS Platform and Distribution", "Python version",
                  "CUDA/cuDNN version", "Current Behaviour?", "Standalone code to reproduce the issue", "Relevant log output"):  # fmt: skip
        assert label in text, label
    assert "BadScaleOp::Compute" in text.split("Relevant log output", 1)[1]
