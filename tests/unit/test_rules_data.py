"""Thread roles and the launched-from markers are rules data."""

from __future__ import annotations

from coreanalyze import model
from coreanalyze.classify.rules import default_rules, load_rules
from coreanalyze.pystacks import thread_role


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
