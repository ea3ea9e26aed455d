"""One worker of a two-worker MultiWorkerMirroredStrategy job (TF_CONFIG names the cluster and
this task). Both workers run one all-reduce step together; then the worker told to crash calls
a raw op that CHECK-fails in TensorFlow 2.21 (LRNGrad with a 1-D output_image) while the other
enters the next step's all-reduce and waits for it there, until a watchdog ends it.

    tf_worker.py RANK_DIR crash|wait

The worker works in RANK_DIR (its core is written there) and leaves `pid` there at start and
`waiting` right before its last call.
"""

import os
import sys

rank_dir, role = sys.argv[1], sys.argv[2]
os.chdir(rank_dir)
with open("pid", "w") as f:
    f.write(str(os.getpid()))

import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()


def replica_step():
    context = tf.distribute.get_replica_context()
    return context.all_reduce("sum", tf.constant([1.0, 2.0]))


@tf.function
def train_step():
    return strategy.run(replica_step)


print("step 0:", train_step().numpy(), flush=True)
open("waiting", "w").close()
if role == "crash":
    grads = tf.ones([1, 1, 1, 4])
    tf.raw_ops.LRNGrad(input_grads=grads, input_image=grads, output_image=tf.ones([1]))
else:
    train_step()  # the peer never comes: blocks in the all-reduce
print("unreachable", flush=True)
