"""A custom op writes twice as many floats as its output holds; glibc aborts at the free.

The overrun clears the "previous chunk in use" bit of the heap chunk behind the output
buffer; nothing notices until the tensor is released, and then free() aborts with
"double free or corruption (!prev)" far from the op that did the damage.

Usage: python3 allocator_heap_corruption.py /path/to/crash_ops.so
"""

import sys

import tensorflow as tf

ops = tf.load_op_library(sys.argv[1])
values = tf.range(4096, dtype=tf.float32)
repeated = ops.repeat_interleave(values)  # the overrun happens here, silently
del repeated  # the tensor's buffer goes back to malloc: glibc aborts here
print("unreachable")
