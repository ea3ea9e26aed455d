"""The JSON contract is a JSON Schema shipped with the package (coreanalyze/schema): valid, in step
with the data model and its vocabularies, printed by `coreanalyze --schema`, and the outline in
docs/json-contract.md is the one written from it. (Every report the tests write is checked
against it in support/clirun.py and tests/conftest.py.)"""

from __future__ import annotations

import dataclasses
import os
import re

import jsonschema
from support.clirun import run_cli
from support.contract import OUTLINE_END, OUTLINE_START, check_report, outline, problems
from support.paths import REPO

from coreanalyze.base import model
from coreanalyze.base.vocabulary import Confidence, FaultKind, FrameKind, ModuleStatus
from coreanalyze.schema import SCHEMA_FILE, report_schema

CONTRACT_DOC = REPO / "docs" / "json-contract.md"
UPDATE = os.environ.get("COREANALYZE_UPDATE_SNAPSHOTS") == "1"

# Each dataclass of the model and the schema object it is written as.
OBJECTS = {
    model.Report: None,
    model.CoreInfo: "core",
    model.SignalInfo: "signal",
    model.ShrunkCore: "shrunk",
    model.Thread: "thread",
    model.Frame: "frame",
    model.Classification: "classification",
    model.Culprit: "culprit",
    model.OpInstance: "op_instance",
    model.OpInput: "tensor",
    model.HangInfo: "hang",
    model.ThreadWait: "thread_wait",
    model.DeadlockStep: "deadlock_step",
    model.GpuFault: "gpu",
    model.OomInfo: "oom",
    model.LaunchedFrom: "launched_from",
    model.Module: "module",
    model.JobInfo: "job",
    model.JobWait: "job_wait",
    model.JobVerdict: "job_verdict",
    model.RankVerdict: "rank_verdict",
}


def test_the_schema_is_a_valid_json_schema_and_the_cli_prints_it():
    jsonschema.Draft202012Validator.check_schema(report_schema())
    run = run_cli("--schema")
    assert run.code == 0 and run.stdout == SCHEMA_FILE.read_text(encoding="utf-8")


def test_every_field_of_the_model_is_in_the_schema_and_nothing_else():
    schema = report_schema()
    for cls, name in OBJECTS.items():
        node = schema if name is None else schema["$defs"][name]
        assert set(node["properties"]) == {f.name for f in dataclasses.fields(cls)}, cls.__name__
        assert node["additionalProperties"] is False


def test_the_schemas_words_are_the_vocabularies():
    defs = report_schema()["$defs"]
    assert defs["classification"]["properties"]["fault_kind"]["enum"] == list(FaultKind)
    assert defs["classification"]["properties"]["confidence"]["enum"] == list(Confidence)
    assert defs["frame"]["properties"]["kind"]["enum"] == list(FrameKind)
    assert defs["module"]["properties"]["status"]["enum"] == list(ModuleStatus)
    assert defs["thread_wait"]["properties"]["state"]["enum"] == list(model.WAIT_STATES)
    assert defs["rank_verdict"]["properties"]["state"]["enum"] == list(model.RANK_STATES)


def test_a_report_that_breaks_the_contract_is_caught():
    report = model.Report(core=model.CoreInfo(path="core.1"), classification=model.Classification(category="tf-runtime"))
    document = report.to_dict()
    check_report(document)
    document["classification"]["fault_kind"] = "segfault"
    document["core"]["signal"]["address"] = 4096
    del document["threads"]
    found = problems(document)
    assert any(p.startswith("$.classification.fault_kind: 'segfault' is not one of") for p in found)
    assert any(p.startswith("$.core.signal.address: ") for p in found)
    assert any("'threads' is a required property" in p for p in found)


def test_the_contract_document_shows_the_schema():
    text = CONTRACT_DOC.read_text(encoding="utf-8")
    block = f"{OUTLINE_START}\n\n```text\n{outline(report_schema())}\n```\n\n{OUTLINE_END}"
    current = text[text.index(OUTLINE_START) : text.index(OUTLINE_END) + len(OUTLINE_END)]
    if UPDATE:
        CONTRACT_DOC.write_text(text.replace(current, block), encoding="utf-8")
        current = block
    assert current == block, "docs/json-contract.md's outline is not the schema's: write it again with COREANALYZE_UPDATE_SNAPSHOTS=1"


def test_the_contract_document_names_every_fault_kind():
    section = CONTRACT_DOC.read_text(encoding="utf-8").split("## Fault kinds", 1)[1]
    named = re.findall(r"(?:^|[\s,])([a-z]+(?:-[a-z]+)*) \(", section.replace("\n", " "))
    assert set(FaultKind) - {"unknown"} <= set(named) and section.rstrip().endswith("unknown.")
