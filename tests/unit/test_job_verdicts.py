"""A job's identity from a process's environment, the verdict over its ranks, the triage of a
job's log and the batch's job events: fed the values and texts launchers write."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from coreanalyze.base.model import Frame, JobWait, RankVerdict, Thread, report_from_dict
from coreanalyze.batch.jobs import job_events
from coreanalyze.batch.store import CoreRecord, record_from_dict
from coreanalyze.jobs.identity import job_of_environment
from coreanalyze.jobs.rules import job_rules
from coreanalyze.jobs.verdict import job_verdict
from coreanalyze.jobs.waiting import collective_in
from coreanalyze.triage import triage_text

TF_CLUSTER = {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]}


def _tf(task_type: str, index: int) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": TF_CLUSTER, "task": {"type": task_type, "index": index}})}


def test_tf_config_ranks_the_chief_first_and_names_the_cluster():
    chief, worker = job_of_environment(_tf("chief", 0)), job_of_environment(_tf("worker", 1))
    assert (chief.rank, chief.world_size, chief.role) == (0, 4, "chief")
    assert (worker.rank, worker.world_size, worker.role, worker.address) == (2, 4, "worker", "w1:2222")
    assert chief.id == worker.id and chief.id.startswith("tf:") and chief.launcher == "tensorflow"
    # A ParameterServerStrategy's parameter server: a rank of its own after the chief and workers.
    ps = job_of_environment(_tf("ps", 0))
    assert (ps.rank, ps.world_size, ps.role, ps.id) == (3, 4, "ps", chief.id)


def test_torchrun_environment():
    env = {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29500",
           "TORCHELASTIC_RUN_ID": "run-7", "ROLE_NAME": "trainer", "TORCHELASTIC_RESTART_COUNT": "0"}
    job = job_of_environment(env, "node1")
    assert (job.id, job.rank, job.world_size, job.local_rank, job.role, job.launcher, job.master, job.host) == (
        "torchrun:run-7", 3, 8, 1, "trainer", "torchrun", "node0:29500", "node1")
    restarted = job_of_environment({**env, "TORCHELASTIC_RESTART_COUNT": "2"})
    assert restarted.id == "torchrun:run-7/attempt-2"
    plain = job_of_environment({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234"})
    assert (plain.id, plain.launcher) == ("torch:10.0.0.1:1234", "torch")


def test_mpi_horovod_slurm_and_jax():
    mpi = job_of_environment({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
                              "PMIX_NAMESPACE": "prterun-n1-42@1", "HOROVOD_RANK": "1", "HOROVOD_SIZE": "4"})
    assert (mpi.id, mpi.rank, mpi.world_size, mpi.launcher) == ("mpi:prterun-n1-42@1", 1, 4, "horovod")
    slurm = job_of_environment({"SLURM_JOB_ID": "991", "SLURM_STEP_ID": "0", "SLURM_PROCID": "5", "SLURM_NTASKS": "6"})
    assert (slurm.id, slurm.rank, slurm.world_size, slurm.launcher) == ("slurm:991.0", 5, 6, "slurm")
    # The scheduler's job names a torchrun job started by srun too.
    both = job_of_environment({"SLURM_JOB_ID": "991", "RANK": "2", "WORLD_SIZE": "4", "TORCHELASTIC_RUN_ID": "x"})
    assert (both.id, both.rank, both.launcher) == ("slurm:991", 2, "torchrun")
    jax = job_of_environment({"JAX_COORDINATOR_ADDRESS": "h0:1234", "JAX_PROCESS_ID": "1", "JAX_NUM_PROCESSES": "2"})
    assert (jax.id, jax.rank, jax.world_size) == ("jax:h0:1234", 1, 2)


def test_jax_from_the_arguments_it_took_on_its_command_line():
    argv = ["python", "train.py", "--coordinator_address=10.0.0.1:8476", "--num_processes", "4", "--process-id=3"]
    jax = job_of_environment({"PATH": "/bin"}, None, argv)
    assert (jax.id, jax.rank, jax.world_size, jax.launcher, jax.master) == ("jax:10.0.0.1:8476", 3, 4, "jax", "10.0.0.1:8476")
    assert jax.variables == ["--coordinator_address", "--num_processes", "--process_id"]
    # An argument outranks the environment, as in jax.distributed.initialize.
    both = job_of_environment({"JAX_COORDINATOR_ADDRESS": "h0:1"}, None, argv)
    assert both.master == "10.0.0.1:8476" and both.id == jax.id
    # The coordinator from the environment, the id and count from the arguments.
    mixed = job_of_environment({"JAX_COORDINATOR_ADDRESS": "h0:1"}, None, ["prog", "--process_id", "1", "--num_processes=2"])
    assert (mixed.id, mixed.rank, mixed.world_size) == ("jax:h0:1", 1, 2)
    # Under SLURM, JAX takes the id and count from it: the scheduler's job names it.
    slurm = job_of_environment({"SLURM_JOB_ID": "7", "SLURM_PROCID": "2", "SLURM_NTASKS": "4", "JAX_COORDINATOR_ADDRESS": "n0:1"})
    assert (slurm.id, slurm.rank, slurm.world_size, slurm.launcher) == ("slurm:7", 2, 4, "jax")


@pytest.mark.parametrize("argv", [
    ["prog", "--process_id=1", "--num_processes=2"],  # any program's flags: no coordinator, no JAX job
    ["prog", "--coordinator_address=<script>:1", "--process_id=1"],
    ["prog", "--process_id"],
    ["prog", "--coordinator_address"],
])
def test_no_jax_job_from_stray_flags(argv):
    assert job_of_environment({}, None, argv) is None


@pytest.mark.parametrize("env", [
    {}, {"PATH": "/bin"}, {"TF_CONFIG": "{not json"}, {"TF_CONFIG": '{"cluster": [], "task": 3}'},
    {"TF_CONFIG": '{"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": true}}'},
    {"RANK": "x", "WORLD_SIZE": "2"}, {"RANK": "99999999999", "WORLD_SIZE": "2"},
])
def test_no_job_from_what_is_not_one(env):
    assert job_of_environment(env) is None


def test_untrusted_values_are_no_ids():
    job = job_of_environment({"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "<script>", "MASTER_ADDR": "../../etc"})
    assert job.id is None or "<" not in job.id


def _rank(rank, state, signature=None, died=None, **kw) -> RankVerdict:
    return RankVerdict(rank=rank, state=state, signature=signature, died=died, **kw)


def test_verdict_names_the_rank_that_crashed_and_those_that_waited():
    wait = JobWait(collective="torch.distributed.all_reduce", file="/x/train.py", line=62)
    v = job_verdict([_rank(0, "waiting", died=2, waited=wait, signal="SIGABRT", sent_by="pid 9"),
                     _rank(1, "crashed", "SIGSEGV | f", died=1, summary="SIGSEGV null-deref in f")], 2, launcher_root_cause=0)
    assert v.root_cause == [1] and v.single and v.missing == []
    assert v.summary.startswith("rank 1 crashed on its own (SIGSEGV null-deref in f); rank 0 waited for it")
    assert "the launcher named rank 0" in v.summary
    waiting = v.ranks[0]
    assert waiting.evidence == ["waited for its peers in torch.distributed.all_reduce at train.py:62", "ended by SIGABRT from pid 9", "died 2nd of the ranks read"]


def test_a_rank_known_to_wait_for_another_waiting_rank_is_one_link_of_a_chain():
    # Four ranks: 2 crashed; 0 waited for it (its memory says so); 3 waited for 0; 1's peer is unknown.
    v = job_verdict([_rank(0, "waiting", waited=JobWait(peer=2)), _rank(1, "waiting", waited=JobWait()),
                     _rank(2, "crashed", "SIGSEGV | f", summary="SIGSEGV in f"), _rank(3, "waiting", waited=JobWait(peer=0))], 4)
    assert v.root_cause == [2] and v.single
    assert v.summary == "rank 2 crashed on its own (SIGSEGV in f); ranks 0 and 1 waited for it; rank 3 waited for rank 0"
    assert v.ranks[3].evidence == ["waited for rank 0"]


def test_verdict_same_reason_other_reason_deadlock_and_lost_ranks():
    same = job_verdict([_rank(0, "crashed", "S", died=1), _rank(1, "crashed", "S", died=2), _rank(2, "crashed", "T", died=3)])
    assert same.root_cause == [0, 1] and "for the same reason" in same.summary and "rank 2 crashed later" in same.summary
    wait = JobWait(collective="torch.distributed.recv")
    deadlock = job_verdict([_rank(0, "waiting", waited=wait), _rank(1, "waiting", waited=wait)], 2)
    assert not deadlock.single and deadlock.root_cause == [] and "a deadlock" in deadlock.summary
    lost = job_verdict([_rank(0, "waiting", waited=wait), _rank(1, "waiting", waited=wait)], 4)
    assert not lost.single and lost.missing == [2, 3] and "lost host" in lost.summary and "deadlock" not in lost.summary
    stuck = job_verdict([_rank(0, "waiting", waited=wait), _rank(1, "stuck", waited=JobWait(function="read"))], 2)
    assert stuck.single and stuck.root_cause == [1] and "outside any collective" in stuck.summary


TORCHRUN_SUMMARY = """\
[default0]:rank 0: step 0 done
[default1]:rank 1: step 0 done
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-28_10:30:19
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : -11 (pid: 23575)  (SIGSEGV)
  error_file: <N/A>
  traceback : Signal 11 (SIGSEGV) received by PID 23575
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-28_10:30:19
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : -6 (pid: 23574)  (SIGABRT)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 23574
============================================================
"""


def test_torchrun_summary_root_cause_is_the_faulting_rank_not_the_first_to_exit():
    report = triage_text(TORCHRUN_SUMMARY)
    job = report.job
    assert job.rank == 1 and job.verdict.root_cause == [1] and job.verdict.launcher_root_cause == 0
    assert report.core.signal.name == "SIGSEGV"
    states = {r.rank: r.state for r in job.verdict.ranks}
    assert states == {0: "unknown", 1: "crashed"}


def test_nccl_watchdog_ranks_wait_for_the_rank_that_faulted():
    text = """\
[rank1]:[E1128 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for 600016 milliseconds before timing out.
[rank1]:terminate called after throwing an instance of 'c10::DistBackendError'
[rank0]:Fatal Python error: Segmentation fault
[rank0]:
[rank0]:Current thread 0x00007f4 (most recent call first):
[rank0]:  File "/work/train.py", line 40 in forward
srun: error: node2: task 1: Aborted (core dumped)
srun: error: node1: task 0: Segmentation fault (core dumped)
"""
    report = triage_text(text)
    v = report.job.verdict
    assert v.root_cause == [0] and report.job.launcher == "slurm"
    waiting = next(r for r in v.ranks if r.rank == 1)
    assert waiting.state == "waiting" and waiting.waited.collective == "NCCL ALLREDUCE" and waiting.host == "node2"
    assert report.core.signal.name == "SIGSEGV"  # the root rank's own lines, not rank 1's abort


def test_mpirun_and_horovod_block():
    text = """\
[1,0]<stderr>:Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks finished execution.
[1,1]<stderr>:F1128 10:00:00.000000 4242 tensor_shape.cc:362] Check failed: d < dims() (1 vs. 1)
[1,1]<stderr>:*** Check failure stack trace: ***
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 4242 on node n1 exited on signal 6 (Aborted).
--------------------------------------------------------------------------
"""
    report = triage_text(text)
    v = report.job.verdict
    assert v.root_cause == [1] and str(report.classification.fault_kind) == "check-failure"
    assert next(r for r in v.ranks if r.rank == 0).state == "waiting"


def test_all_ranks_timed_out_is_no_single_rank():
    text = """\
[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST) ran for 600000 milliseconds before timing out.
[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.
"""
    report = triage_text(text)
    assert report.job.verdict.root_cause == [] and not report.job.verdict.single
    assert "all 2 ranks were waiting" in report.job.verdict.summary


def test_one_process_text_is_not_a_job():
    assert triage_text("Segmentation fault (core dumped)\n").job is None


def _record(path: str, rank: int, state: str, timestamp: float, **kw) -> CoreRecord:
    job = {"id": "torchrun:r1", "rank": rank, "world_size": 2, "state": state, "waited": kw.pop("waited", None)}
    return CoreRecord(identity=f"{rank:064x}", file_identity=f"{rank:064x}", path=path, status="ok", timestamp=timestamp,
                      job=job, host="n1", **kw)


def test_batch_events_fold_a_job_and_name_the_senders():
    crashed = _record("/c/1", 1, "crashed", 100.0, pid=11, signature="SIGSEGV | f", fault_kind="null-deref", signal="SIGSEGV")
    waiting = _record("/c/0", 0, "waiting", 101.0, pid=10, sender_pid=11, signal="SIGABRT", waited={"collective": "gloo (allreduce)"})
    later = _record("/c/0b", 0, "crashed", 200.0, pid=20, signature="SIGSEGV | f")  # rank 0 again: another run
    events = job_events([waiting, crashed, later])
    assert [len(e.members) for e in events] == [2, 1]
    first = events[0]
    assert first.representative is crashed and first.verdict.root_cause == [1]
    ranks = {r.rank: r for r in first.verdict.ranks}
    assert ranks[0].sent_by == "rank 1" and ranks[0].died == 2 and ranks[1].died == 1


def test_records_keep_old_fields_and_check_the_new_ones():
    record = _record("/c/0", 0, "waiting", 1.0, ppid=3, sender_pid=4, waited={"collective": 5, "line": "x", "extra": 1})
    back = record_from_dict(json.loads(json.dumps(record.to_dict())))
    assert back.job["waited"] == {"collective": None, "function": None, "file": None, "python_function": None, "message": None, "line": None, "peer": None, "serving": False}
    assert (back.ppid, back.sender_pid) == (3, 4)
    old = record.to_dict()
    for name in ("job", "ppid", "sender_pid"):
        del old[name]
    assert record_from_dict(old).job is None
    bad = record.to_dict()
    bad["job"] = ["not", "a", "job"]
    with pytest.raises(ValueError):
        record_from_dict(bad)


def test_report_job_round_trips_through_json():
    report = triage_text(TORCHRUN_SUMMARY)
    again = report_from_dict(json.loads(json.dumps(report.to_dict())))
    assert again.job.verdict.root_cause == [1] and again.job.verdict.ranks[1].state == "crashed"


def _native(*functions: str) -> Thread:
    return Thread(tid=1, frames=[Frame(index=i, function=f) for i, f in enumerate(functions)])


def test_a_transports_wait_names_the_collective_only_where_nothing_above_it_does():
    wait = "gloo::transport::tcp::UnboundBuffer::waitRecv(int*, std::chrono::duration<long, std::ratio<1l, 1000l> >)"
    # JAX's all-reduce on the CPU: XLA's thunk calls gloo's allreduce, which waits in the transport.
    xla = _native("___pthread_cond_timedwait64", wait, "gloo::allreduce(gloo::AllreduceOptions const&)",
                  "xla::cpu::GlooCommunicator::AllReduce(stream_executor::DeviceAddressBase)", "xla::cpu::AllReduceThunk::Execute()")
    assert collective_in([xla], xla, job_rules())[0] == "gloo (allreduce)"
    bare = _native("___pthread_cond_timedwait64", wait, "some::caller()")
    assert collective_in([bare], bare, job_rules())[0] == "gloo (waitRecv)"
    # Another thread's collective outranks the waiting thread's transport wait.
    other = _native("c10d::ProcessGroupGloo::recv(std::vector<at::Tensor>&, int, int)")
    assert collective_in([bare, other], bare, job_rules())[0] == "torch.distributed (recv)"
    barrier = _native("absl::Notification::WaitForNotification() const", "xla::CoordinationServiceAgent::WaitAtBarrier(std::string_view)")
    assert collective_in([barrier], barrier, job_rules())[0] == "XLA WaitAtBarrier"


def test_a_tensorflow_step_waits_for_its_peers_only_in_a_task_of_a_job():
    # The frames of a real MWMS worker whose peer died in the first step: no thread in a collective.
    main = _native("absl::lts_20250814::Notification::WaitForNotification() const",
                   "tensorflow::ProcessFunctionLibraryRuntime::RunSync(tensorflow::FunctionLibraryRuntime::Options const&, unsigned long)",
                   "tensorflow::KernelAndDeviceFunc::Run(tensorflow::ScopedStepContainer*)")
    agent = _native("absl::lts_20250814::Mutex::AwaitCommon(absl::lts_20250814::Condition const&)",
                    "tsl::CoordinationServiceAgent::StartSendingHeartbeats()")
    name, thread = collective_in([main, agent], main, job_rules())
    assert name == "TensorFlow multi-worker step (its collectives wait on the other tasks)" and thread is main
    # A single process's tf.function waiting on a notification is no job's step.
    assert collective_in([main], main, job_rules()) == (None, None)
    # A thread inside the ring all-reduce names it, before the step.
    ring = _native("tensorflow::RingAlg::PCQueue::Dequeue()", "tensorflow::RingReducer::RunAsyncParts()")
    assert collective_in([main, agent, ring], main, job_rules())[0] == "TensorFlow all-reduce (RingReducer)"


def test_a_parameter_server_strategy_task_serving_in_server_join_waits_for_the_coordinator():
    # The main thread of a real PSS worker's core, ended by a watchdog while it served.
    serving = _native("__pthread_clockjoin_ex", "tsl::(anonymous namespace)::PThread::~PThread()", "tensorflow::GrpcServer::Join()", "TF_ServerJoin")
    name = collective_in([serving], serving, job_rules())[0]
    assert name == "TensorFlow server (Server.join: serving the coordinator's steps)" and job_rules().serves(name)
    assert not job_rules().serves("TensorFlow all-reduce (RingReducer)") and not job_rules().serves("gloo (allreduce)") and not job_rules().serves(None)


def test_tasks_that_served_are_said_to_have_kept_serving_not_to_have_waited():
    crashed = RankVerdict(rank=2, state="crashed", fault_kind="null-deref", signal="SIGSEGV", summary="SIGSEGV null-deref in f")
    chief = RankVerdict(rank=0, state="waiting", signal="SIGABRT", waited=JobWait(collective="coordinator", peer=2))
    served = [RankVerdict(rank=r, state="waiting", signal="SIGABRT", waited=JobWait(collective="server", serving=True)) for r in (1, 3)]
    v = job_verdict([crashed, chief, *served], world_size=4)
    assert v.root_cause == [2]
    assert v.summary == "rank 2 crashed on its own (SIGSEGV null-deref in f); rank 0 waited for it; ranks 1 and 3 kept serving the job's other tasks"
    assert served[0].evidence[0] == "kept serving the job's other tasks in server"


def test_batch_shrink_takes_every_rank_of_a_job_its_example_stands_for():
    from coreanalyze.batch.jobs import other_ranks
    from coreanalyze.batch.summary import group_examples

    crashed = _record("/c/1", 1, "crashed", 100.0, pid=11, signature="SIGSEGV | f", fault_kind="null-deref", signal="SIGSEGV")
    waiting = _record("/c/0", 0, "waiting", 101.0, pid=10, signal="SIGABRT", waited={"collective": "gloo (allreduce)"}, signature="hang | x",
                      fault_kind="hang")
    alone = CoreRecord(identity="e" * 64, file_identity="e" * 64, path="/c/other", status="ok", timestamp=5.0, signature="SIGILL | g")
    records = [crashed, waiting, alone]
    examples = group_examples(records)
    assert sorted(r.path for r in examples) == ["/c/1", "/c/other"]  # the job counts once, under its root cause
    assert [r.path for r in other_ranks(records, examples)] == ["/c/0"]
    # Each rank's small core is listed with it in the job's entry.
    shrunk = [replace(r, shrunk=f"shrunk/{r.path[3:]}.core.zst") for r in (crashed, waiting)]
    ranks = {r["rank"]: r["shrunk"] for r in job_events(shrunk)[0].to_dict()["ranks"]}
    assert ranks == {0: "shrunk/0.core.zst", 1: "shrunk/1.core.zst"}


def test_a_coordinator_waiting_for_a_failed_workers_recovery_waits_for_that_worker():
    # The threads of a real ParameterServerStrategy chief's core whose worker faulted: the main
    # thread trains on (asleep between steps); the coordinator's thread for the failed worker
    # waits for its recovery.
    main = Thread(tid=1, frames=[Frame(index=0, kind="native", function="clock_nanosleep"),
                                 Frame(index=1, kind="python", function="<module>", file="/srv/train/tf_ps_task.py", line=75)])
    coordinator = "/venv/lib/python3.11/site-packages/tensorflow/python/distribute/coordinator/cluster_coordinator.py"
    recovery = Thread(tid=2, frames=[Frame(index=0, kind="python", function="Condition.wait", file="/usr/lib/python3.11/threading.py", line=327),
                                     Frame(index=1, kind="python", function="WorkerPreemptionHandler.wait_on_failure", file=coordinator, line=955)])
    name, thread = collective_in([main, recovery], main, job_rules())
    assert name == "TensorFlow ClusterCoordinator (WorkerPreemptionHandler.wait_on_failure: a failed worker's recovery)" and thread is recovery
    # The preemption handler's own loop waits in every chief, whether a worker failed or not.
    handler = Thread(tid=3, frames=[Frame(index=0, kind="python", function="Event.wait", file="/usr/lib/python3.11/threading.py", line=622),
                                    Frame(index=1, kind="python", function="WorkerPreemptionHandler._preemption_handler", file=coordinator, line=983)])
    assert collective_in([main, handler], main, job_rules()) == (None, None)


def _process_holding(*texts: bytes):
    from coreanalyze.process.process import Process

    return Process.in_memory({0x10000: b"\0".join((b"junk", *texts, b""))})


# The error of a call to a task that failed, as a real PSS chief's memory holds it (TF 2.21).
FAILED_CALL = (b"Additional GRPC error information from remote target /job:worker/replica:0/task:1 while calling "
               b'/tensorflow.eager.EagerService/Enqueue:\n:UNKNOWN:Error received from peer  {grpc_status:14, '
               b'grpc_message:"recvmsg:Connection reset by peer"}')


def test_the_task_a_tensorflow_task_waited_for_is_read_from_the_failed_calls_in_its_memory():
    from coreanalyze.jobs.peers import peer_in_memory

    rules = job_rules()
    # /job:worker/task:1 is rank 2 in a cluster with a chief: the core's own TF_CONFIG ranks it.
    peer = peer_in_memory(_process_holding(FAILED_CALL, FAILED_CALL), _tf("chief", 0), 0, rules)
    assert (peer.rank, peer.count) == (2, 2) and "closed its connection" in peer.says
    assert peer.line.startswith("Additional GRPC error information from remote target /job:worker/replica:0/task:1")
    # An error the remote task only relayed from another names no one; nor does a task itself;
    # two tasks named as often are no answer.
    relayed = FAILED_CALL.replace(b'grpc_message:"', b'grpc_message:"from remote target /job:ps/replica:0/task:0: ')
    assert peer_in_memory(_process_holding(relayed), _tf("chief", 0), 0, rules) is None
    assert peer_in_memory(_process_holding(FAILED_CALL), _tf("worker", 1), 2, rules) is None
    other = FAILED_CALL.replace(b"/job:worker/replica:0/task:1", b"/job:worker/replica:0/task:0")
    assert peer_in_memory(_process_holding(FAILED_CALL, other), _tf("chief", 0), 0, rules) is None
    assert peer_in_memory(_process_holding(FAILED_CALL, other, other), _tf("chief", 0), 0, rules).rank == 1
    assert peer_in_memory(_process_holding(FAILED_CALL), {}, 0, rules) is None


def test_a_parameter_server_strategy_coordinators_log_ranks_the_chief_first():
    # The chief's coordinator names the failed worker; no line names /job:chief/.
    chief = ["ERROR:tensorflow:Worker /job:worker/replica:0/task:1 failed with UnavailableError():recvmsg:Connection reset by peer",
             *FAILED_CALL.decode().splitlines()]
    text = "".join(f"0: {line}\n" for line in chief) + "1: serving\n2: crashing\n3: serving\n"
    verdict = triage_text(text, "pss").job.verdict
    assert verdict.root_cause == [2], verdict.summary
    assert {r.rank: r.waited.peer for r in verdict.ranks if r.waited is not None} == {0: 2}
    # The coordinator logged it from its wait for the worker's recovery: named as a core's frames name it.
    chief = next(r for r in verdict.ranks if r.rank == 0)
    assert chief.waited.collective == "TensorFlow ClusterCoordinator (WorkerPreemptionHandler.wait_on_failure: a failed worker's recovery)"
