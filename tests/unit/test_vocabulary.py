"""The vocabularies are StrEnums: their words in JSON and text, their properties in code."""

from __future__ import annotations

import json

import jinja2

from coreanalyze.base.model import FAULT_KINDS, MODULE_STATUSES, Module
from coreanalyze.base.vocabulary import FaultKind, FrameKind, ModuleStatus, module_status


def test_members_read_and_write_as_their_words():
    status = ModuleStatus.NO_BUILD_ID
    assert status == "no-build-id" and str(status) == "no-build-id" and f"{status}" == "no-build-id"
    assert json.dumps({"status": status, "kind": FrameKind.PYTHON}) == '{"status": "no-build-id", "kind": "python"}'
    assert jinja2.Template("{{ s }}").render(s=status) == "no-build-id"
    assert "null-deref" in FAULT_KINDS and FaultKind("sent-signal") is FaultKind.SENT_SIGNAL
    assert MODULE_STATUSES == ("ok", "mismatch", "missing", "no-build-id")


def test_module_status_properties():
    assert [s for s in ModuleStatus if s.unreliable] == ["mismatch", "missing"]
    assert [s for s in ModuleStatus if s.trusted_image] == ["ok", "no-build-id"]
    assert ModuleStatus.MISMATCH.problem == "build-id differs from the local file" and ModuleStatus.OK.problem is None
    assert sorted(ModuleStatus, key=lambda s: s.rank) == ["mismatch", "missing", "no-build-id", "ok"]


def test_a_status_read_back_from_json_is_a_member_again():
    assert Module(path="/lib/x.so", status="mismatch").status is ModuleStatus.MISMATCH
    assert Module(path="/lib/x.so", status="garbled").status is ModuleStatus.MISSING
    assert module_status("ok") is ModuleStatus.OK and module_status("nope") is None
