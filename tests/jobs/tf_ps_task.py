"""One task of a ParameterServerStrategy job (TF_CONFIG names the cluster and this task): the chief
runs the coordinator and schedules training steps on the workers; workers and parameter servers
serve. The task told to crash (a worker or a ps) faults in native code once the chief has run a
few steps (the chief's `stepped` mark in the sibling directory `chief`); the others go on until a
watchdog, or TensorFlow's own errors, end them. Made tests/data/tfjob/ps0_crashed (its README).

    tf_ps_task.py TASK_DIR crash|serve
"""

import ctypes
import os
import sys
import time

task_dir, action = sys.argv[1], sys.argv[2]
os.chdir(task_dir)
with open("pid", "w") as f:
    f.write(str(os.getpid()))

import tensorflow as tf  # noqa: E402

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type, task_index=resolver.task_id,
                                  protocol="grpc", start=True)
    if action == "crash":
        while not os.path.exists("../chief/stepped"):
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
    open("stepped", "w").close()
    open("waiting", "w").close()
    for _ in range(1000):
        coordinator.schedule(train_step)
        time.sleep(0.05)
    coordinator.join()
    print("unreachable", flush=True)
