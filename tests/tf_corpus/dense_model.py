"""A tiny dense model converted to TFLite by TensorFlow's own converter: relu(x @ weights + 1.0)
with x float32[1,8] and weights [8,4], one FULLY_CONNECTED node. Run as a script it writes
the model to the file named by its argument (for interpreters on other machines)."""

import sys

import numpy as np
import tensorflow as tf


def dense_tflite_model() -> bytes:
    weights = tf.constant(np.arange(32, dtype=np.float32).reshape(8, 4) / 32.0)

    @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
    def dense(x):
        return tf.nn.relu(tf.matmul(x, weights) + 1.0)

    converter = tf.lite.TFLiteConverter.from_concrete_functions([dense.get_concrete_function()], dense)
    return converter.convert()


if __name__ == "__main__":
    with open(sys.argv[1], "wb") as f:
        f.write(dense_tflite_model())
