"""LRNGrad inside a tf.function, as a named node with its attributes set: graph execution runs
the node `lrn_backward`, whose kernel CHECK-fails on the 1-D output_image (as in
kernel_check_failure.py) and aborts the process. The signature leaves the shapes unknown, so
that graph construction cannot see the mismatch the kernel trips over.
"""

import tensorflow as tf


@tf.function(input_signature=[tf.TensorSpec(None, tf.float32)] * 3)
def normalize_backward(grads, image, output_image):
    return tf.raw_ops.LRNGrad(
        input_grads=grads, input_image=image, output_image=output_image,
        depth_radius=2, bias=1.5, alpha=0.25, beta=0.75, name="lrn_backward",
    )


grads = tf.fill([1, 1, 2, 3], 0.5)
image = tf.reshape(tf.range(6, dtype=tf.float32), [1, 1, 2, 3])
output_image = tf.constant([2.0])
normalize_backward(grads, image, output_image)  # <- crash call site
print("unreachable")
