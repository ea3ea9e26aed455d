"""The TensorFlow hang rules (coreanalyze/hang/rules.toml) on threads spelled the way gdb names
TensorFlow 2.21's frames. The fork rule is also tested on a real core (test_hangs.py); these
cover the rules whose hangs have no small reliable reproducer."""

from __future__ import annotations

from coreanalyze.base.model import Frame, Thread
from coreanalyze.hang.rules import hang_rules
from coreanalyze.hang.tensorflow import match_tensorflow_hang
from coreanalyze.hang.waits import mutex_owner, thread_waits

PID = 100

COND_WAIT = ["__futex_abstimed_wait_common64", "___pthread_cond_wait", "std::condition_variable::wait(std::unique_lock<std::mutex>&)"]
POOL_WORKER = [*COND_WAIT, "Eigen::EventCount::CommitWait(Eigen::EventCount::Waiter*)",
               "Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WaitForWork(Eigen::EventCount::Waiter*, tsl::thread::EigenEnvironment::Task*)",
               "Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)", "std::_Function_handler<void ()>::_M_invoke(std::_Any_data const&)",
               "tsl::(anonymous namespace)::PThread::ThreadFn(void*)", "start_thread"]  # fmt: skip
GIL_WAIT = ["__futex_abstimed_wait_common64", "___pthread_cond_timedwait64", "take_gil", "PyEval_RestoreThread", "PyGILState_Ensure"]


def thread(tid: int, functions: list[str], holds_gil: bool | None = None) -> Thread:
    return Thread(tid=tid, frames=[Frame(index=i, function=f) for i, f in enumerate(functions)], holds_gil=holds_gil)


def match(threads: list[Thread]):
    rules = hang_rules()
    waits = thread_waits(threads, None, rules)
    return match_tensorflow_hang(threads, waits, rules, PID), waits


def test_idle_pools_while_the_main_thread_waits():
    main = thread(PID, [*COND_WAIT, "absl::Notification::WaitForNotification() const",
                        "tensorflow::DirectSession::WaitForNotification(tsl::Notification*, long)",
                        "tensorflow::DirectSession::Run(...)", "TF_SessionRun"])  # fmt: skip
    pools = [thread(PID + i, POOL_WORKER) for i in range(1, 5)]
    found, waits = match([main, *pools])
    assert found is not None and found.rule.name == "idle-pools-main-waits"
    assert found.threads["main"] == PID
    assert {w.state for w in waits} == {"condition"}
    assert waits[0].function == "tensorflow::DirectSession::WaitForNotification"


def test_a_busy_pool_thread_is_not_idle():
    main = thread(PID, [*COND_WAIT, "absl::Notification::WaitForNotification() const", "tensorflow::DirectSession::WaitForNotification"])
    busy = thread(PID + 1, ["Eigen::internal::TensorExecutor<...>::run", "Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)"])
    found, _ = match([main, thread(PID + 2, POOL_WORKER), busy])
    assert found is None


def test_py_function_waiting_for_the_gil_held_by_a_thread_waiting_on_tensorflow():
    py_function = thread(PID + 3, [*GIL_WAIT, "tensorflow::(anonymous namespace)::CallPythonFunc(...)",
                                   "tensorflow::EagerPyFunc::Compute(tensorflow::OpKernelContext*)",
                                   "tensorflow::ThreadPoolDevice::Compute(...)"])  # fmt: skip
    holder = thread(PID, [*COND_WAIT, "absl::Notification::WaitForNotification() const",
                          "tensorflow::EagerExecutor::SyncExecute(tensorflow::EagerNode*)",
                          "tensorflow::EagerExecute(tensorflow::EagerOperation*, tensorflow::TensorHandle**, int*)", "TFE_Execute"],
                    holds_gil=True)  # fmt: skip
    found, waits = match([holder, py_function])
    assert found is not None and found.rule.name == "py-function-waits-for-gil"
    assert found.threads == {"py-function": PID + 3, "holder": PID}
    gil_wait = next(w for w in waits if w.tid == PID + 3)
    assert gil_wait.state == "gil" and gil_wait.owner == PID


def test_tf_data_threads_blocked_on_their_buffers():
    prefetch = thread(PID + 7, [*COND_WAIT, "tensorflow::data::PrefetchDatasetOp::Dataset::Iterator::PrefetchThread(std::shared_ptr<tensorflow::data::IteratorContext> const&)",
                                "std::_Function_handler<void ()>::_M_invoke", "tsl::(anonymous namespace)::PThread::ThreadFn(void*)"])  # fmt: skip
    found, _ = match([thread(PID, ["__GI___libc_read", "_Py_read"]), prefetch])
    assert found is not None and found.rule.name == "tf-data-buffer"
    assert found.threads["data-thread"] == PID + 7


def test_mutex_owner_reads_the_glibc_mutex_word():
    class Memory:
        def __init__(self, words: bytes):
            self.words = words

        def read(self, address: int, size: int) -> bytes | None:
            return self.words[address : address + size] if address + size <= len(self.words) else None

    locked = (2).to_bytes(4, "little") + (0).to_bytes(4, "little") + (4242).to_bytes(4, "little")
    unlocked = bytes(12)
    assert mutex_owner(Memory(locked), 0) == 4242
    assert mutex_owner(Memory(unlocked), 0) is None
    assert mutex_owner(Memory(locked), 8) is None  # not readable


def test_rules_speak_the_documented_vocabularies():
    from coreanalyze.base.model import WAIT_STATES
    from coreanalyze.classify.rules import default_rules

    CATEGORIES = default_rules().categories

    rules = hang_rules()
    assert {w.state for w in rules.waits} <= set(WAIT_STATES)
    for table in rules.syscalls.values():
        assert set(table.states.values()) <= set(WAIT_STATES)
    for rule in rules.tensorflow:
        assert rule.category in CATEGORIES and rule.advice
        assert all(set(p.state) <= set(WAIT_STATES) for p in rule.roles)
