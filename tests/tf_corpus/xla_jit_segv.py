"""tf.strided_slice of a bounded-dynamic tensor with begin [-1, 0] and end [0, 3] under
jit_compile=True (TensorFlow issue #124950, 2.21): the tf2xla lowering computes a negative
runtime size, and the kernel XLA:CPU compiled for the SliceToDynamic custom call faults. The pc
is in code XLA compiled at run time, in an anonymous executable mapping, under the XLA launch
of the tf.function's cluster.
"""

import tensorflow as tf


@tf.function(jit_compile=True)
def sliced(x):
    dynamic = tf.boolean_mask(x, x[:, 0] > 0.0)
    return tf.strided_slice(dynamic, [-1, 0], [0, 3])


sliced(tf.ones([4, 3]))
print("unreachable")
