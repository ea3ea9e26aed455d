"""One task of a ParameterServerStrategy job (TF_CONFIG names the cluster and this task): the chief
runs the coordinator and schedules training steps on the workers; workers and parameter servers
serve. The task told to crash (a worker or a ps) faults in native code once the chief has run a
few steps (the chief's `stepped` mark); the others go on until a watchdog, or TensorFlow's own
errors, end them. Each task leaves `pid` in its directory, and `waiting` once it only serves (a
worker, a ps) or once its coordinator has reported a failed worker (the chief). Made
tests/data/tfjob/ps0_crashed (its README); tests/support/jobcores.py runs it with a worker that
faults.

    tf_ps_task.py TASK_DIR crash|serve [CHIEF_DIR]

CHIEF_DIR is the chief's task directory, where it leaves `stepped` (default: the sibling `chief`).
"""

import ctypes
import logging
import os
import re
import sys
import threading
import time

task_dir, action = sys.argv[1], sys.argv[2]
stepped = os.path.join(os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else os.path.join(task_dir, "..", "chief")), "stepped")
os.chdir(task_dir)
with open("pid", "w") as f:
    f.write(str(os.getpid()))

import tensorflow as tf  # noqa: E402

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                                  protocol="grpc", start=True)
    if action == "crash":
        while not os.path.exists(stepped):
            time.sleep(0.1)
        print("crashing", flush=True)
        ctypes.string_at(0)
    open("waiting", "w").close()
    server.join()
else:
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        weight = tf.Variable(1.0)

    @tf.function
    def train_step():
        weight.assign_add(1.0)
        return weight.read_value()

    for _ in range(3):
        coordinator.schedule(train_step)
    coordinator.join()
    print("steps done:", weight.numpy(), flush=True)
    open(stepped, "w").close()
    # Training goes on while a task fails. A parameter server's failure ends it: the coordinator
    # raises. A worker's does not: the coordinator logs it, keeps a thread waiting for the worker
    # to come back (and, beside it, a cluster update that waits for the worker to answer), and
    # runs the steps on the other workers. The chief leaves `waiting` once its coordinator has said
    # so, and trains on until a watchdog ends it.
    worker_failed = threading.Event()

    class _WorkerFailure(logging.Handler):
        def emit(self, record):
            if re.match(r"Worker \S+ failed with", record.getMessage()):
                worker_failed.set()

    tf.get_logger().addHandler(_WorkerFailure())
    for _ in range(6000):
        if worker_failed.is_set() and not os.path.exists("waiting"):
            open("waiting", "w").close()
        coordinator.schedule(train_step)
        time.sleep(0.05)
    coordinator.join()
    print("unreachable", flush=True)
