"""TFSA-2022-145 (CVE-2022-41883): tf.raw_ops.DynamicStitch with fewer `indices` than `data`
tensors reads past its inputs and faults (a null dereference) before its kernel runs, in the
eager runtime's kernel lookup. Fixed in TensorFlow 2.10.1 and 2.11.0; 2.10.0 still crashes.
"""

import tensorflow as tf

tf.raw_ops.DynamicStitch(
    indices=[tf.constant([[0, 1]])], data=[tf.constant([[5, 6]]), tf.constant([[7, 8]])]
)  # <- crash call site
print("unreachable")
