"""The faulting custom op runs inside a tf.function: graph execution puts it on an inter-op
thread-pool worker, while the Python main thread waits in the function call marked below.

Usage: python3 worker_thread_segv.py /path/to/crash_ops.so
"""

import sys

import tensorflow as tf

ops = tf.load_op_library(sys.argv[1])


@tf.function
def train_step(features):
    left = ops.scatter_to_slots(features)
    right = ops.scatter_to_slots(features * 2.0)
    return left + right


features = tf.range(16, dtype=tf.float32)
result = train_step(features)  # <- crash call site
print(result)
