"""Thread roles, the launched-from markers and the allocator's messages are rules data."""

from __future__ import annotations

import re

import pytest

from coreanalyze.base import model
from coreanalyze.classify.abortmsg import message_kind
from coreanalyze.classify.rules import builtin_heap_messages, default_rules, load_rules, required_literal
from coreanalyze.pipeline.pystacks import thread_role
from coreanalyze.triage.abort_messages import _ALLOCATOR_MESSAGES, _maybe_allocator


def pool_thread(name: str | None, *functions: str) -> model.Thread:
    frames = [model.Frame(index=i, function=f) for i, f in enumerate(functions)]
    return model.Thread(tid=7, name=name, frames=frames)


def test_builtin_roles_come_from_the_rules_file():
    rules = default_rules()
    assert [r.role for r in rules.thread_roles][:3] == ["main", "tf-data", "tf-inter-op"]
    assert "TFE_Execute" in rules.op_execution_markers and "pthread_cond_wait" in rules.wait_markers
    worker = pool_thread(None, "futex_wait", "Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)")
    assert thread_role(worker, pid=1, has_python=False) == "tf-pool"
    assert thread_role(pool_thread("tf_data_iterator"), pid=1, has_python=False) == "tf-data"
    assert thread_role(pool_thread(None, "main"), pid=7, has_python=False) == "main"
    assert thread_role(pool_thread(None, "read"), pid=1, has_python=True) == "python"


def test_a_rules_file_may_add_roles_ahead_of_the_builtin_ones(tmp_path):
    extra = tmp_path / "roles.toml"
    extra.write_text("[[thread_role]]\nrole = 'acme-decoder'\nnames = ['^acme_']\nframes = ['acme::Decoder::Run']\n")
    rules = load_rules([extra])
    assert rules.thread_roles[0].role == "acme-decoder"
    assert [r.role for r in rules.thread_roles[1:]] == [r.role for r in default_rules().thread_roles]


def test_a_rules_file_role_reaches_the_threads(tmp_path):
    extra = tmp_path / "roles.toml"
    extra.write_text("[[thread_role]]\nrole = 'acme-decoder'\nnames = []\nframes = ['acme::Decoder::Run']\n")
    decoder = pool_thread(None, "acme::Decoder::Run()")
    assert thread_role(decoder, pid=1, has_python=False) is None
    assert thread_role(decoder, pid=1, has_python=False, rules=load_rules([extra])) == "acme-decoder"


# --------------------------------------------------------------------------------------------
# The allocator's messages: one list in the rules data, read by every stage


HEAP_MESSAGE_SAMPLES = [
    "free(): double free detected in tcache 2",
    "double free or corruption (out)",
    "malloc(): unaligned tcache chunk detected",
    "corrupted size vs. prev_size while consolidating",
    "munmap_chunk(): invalid pointer",
    "==12==ERROR: AddressSanitizer: attempting double-free on 0x602000000010",
    "src/tcmalloc.cc:333] Attempt to free invalid pointer 0x7f00",
    "<jemalloc>: size mismatch detected",
]


@pytest.mark.parametrize("message", HEAP_MESSAGE_SAMPLES)
def test_every_stage_reads_the_one_list_of_heap_messages(message):
    assert any(re.search(p, message) for p in builtin_heap_messages())
    assert any(p.search(message) for p in default_rules().fault.heap_messages)
    (rule,) = [r for r in default_rules().rules if r.name == "malloc-abort-message"]
    assert rule.abort_message.search(message)
    if "Sanitizer" not in message:  # a sanitizer's report has its own parser (triage/asan.py)
        assert _maybe_allocator(message) and _ALLOCATOR_MESSAGES.search(message)
    assert message_kind(message) == "glibc-malloc"


@pytest.mark.parametrize(
    "pattern, literal",
    [
        (r"double free", "double free"),
        (r"free\(\): (invalid|double free)", "free(): "),
        (r"(?:free|malloc)\(\): ", "(): "),
        (r"src/tcmalloc\.cc:\d+\] Attempt to free", "] Attempt to free"),
        (r"ab?cd", "cd"),
        (r"x[abc]yz", "yz"),
        (r"ab+c", "ab"),
    ],
)
def test_required_literal_is_in_every_match(pattern, literal):
    assert required_literal(pattern) == literal
