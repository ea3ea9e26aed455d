"""LRNGrad with a 1-D output_image: the kernel asks for dim_size(1) of a 1-D shape.

TensorShape::dim_size CHECK-fails ("Check failed: d < dims()") and absl's fatal log aborts
the process with SIGABRT from inside LRNGradOp::Compute.
"""

import tensorflow as tf

grads = tf.ones([1, 1, 1, 4])
image = tf.ones([1, 1, 1, 4])
output_image = tf.ones([1])  # dim 0 matches the batch, so the kernel reaches dim_size(1)
tf.raw_ops.LRNGrad(input_grads=grads, input_image=image, output_image=output_image)
print("unreachable")
