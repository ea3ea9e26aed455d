"""A custom op whose Compute stores through a null pointer: SIGSEGV in the op's own kernel.

Usage: python3 kernel_compute_segv.py /path/to/crash_ops.so
"""

import sys

import tensorflow as tf

ops = tf.load_op_library(sys.argv[1])
values = tf.range(16, dtype=tf.float32)
slots = ops.scatter_to_slots(values)  # ScatterToSlotsOp::Compute faults here
print(slots)
