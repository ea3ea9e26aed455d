"""A TensorFlow process that dies in native code: it imports TensorFlow, runs an op (so that
TensorFlow's thread pools exist), then reads through a null pointer."""

import ctypes

import tensorflow as tf

x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
print(float(tf.reduce_sum(tf.matmul(x, x))))
ctypes.string_at(0)
