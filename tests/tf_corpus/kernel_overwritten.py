"""A custom op whose Compute overwrites its own kernel object (all but the vtable pointer) and
then faults: the object's node name and op type are gone from memory, so no op instance may be
read from it.

Usage: python3 kernel_overwritten.py /path/to/crash_ops.so
"""

import sys

import tensorflow as tf

ops = tf.load_op_library(sys.argv[1])
values = tf.range(8, dtype=tf.float32)
ops.overwrite_own_kernel(values)  # OverwriteOwnKernelOp::Compute faults here
print("unreachable")
