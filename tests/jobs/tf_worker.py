"""One worker of a two-worker MultiWorkerMirroredStrategy job. The workers run training steps
together (a kernel, then an all-reduce of its result inside the strategy's replica function); in
the last step the worker told to crash feeds the kernel an input that CHECK-fails in TensorFlow
2.21 (LRNGrad with a 1-D output_image), inside the replica function, before its all-reduce,
while the other reaches the all-reduce of that step and waits for it there until a watchdog (or
TensorFlow's own heartbeat timeout) ends it.

    tf_worker.py RANK_DIR crash|wait [--cluster HOST:PORT,HOST:PORT --index N] [--steps N]

Without --cluster, TF_CONFIG comes from the launcher's environment; with it, the script builds
TF_CONFIG from its flags and sets it itself (`os.environ["TF_CONFIG"] = json.dumps(...)`), as many
training scripts do: then it is not in the environment the process started with.
The worker works in RANK_DIR (its core is written there) and leaves `pid` there at start and
`waiting` right before its last step.
"""

import argparse
import json
import os

parser = argparse.ArgumentParser()
parser.add_argument("rank_dir")
parser.add_argument("role", choices=("crash", "wait"))
parser.add_argument("--cluster")
parser.add_argument("--index", type=int)
parser.add_argument("--steps", type=int, default=2)  # the last one is the crash's
args = parser.parse_args()
os.chdir(args.rank_dir)
with open("pid", "w") as f:
    f.write(str(os.getpid()))
if args.cluster:
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": args.cluster.split(",")}, "task": {"type": "worker", "index": args.index}})

import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()


def replica_step(image):
    # The kernel's result feeds the all-reduce: a worker whose kernel dies never contributes.
    grads = tf.raw_ops.LRNGrad(input_grads=tf.ones([1, 1, 1, 4]), input_image=tf.ones([1, 1, 1, 4]), output_image=image)
    context = tf.distribute.get_replica_context()
    return context.all_reduce("sum", tf.constant([1.0, 2.0]) + 0.0 * tf.reduce_sum(grads))


# Any shape: the graph is the same on both workers, and the bad input reaches the kernel.
@tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
def train_step(image):
    return strategy.run(replica_step, args=(image,))


for step in range(args.steps):
    last = step == args.steps - 1
    if last:
        open("waiting", "w").close()
    image = tf.ones([1]) if last and args.role == "crash" else tf.ones([1, 1, 1, 4])
    print(f"step {step}:", train_step(image).numpy(), flush=True)  # the waiting worker's peer never comes to the last
print("unreachable", flush=True)
