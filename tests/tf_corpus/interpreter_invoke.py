"""A tiny dense model converted to TFLite and run by tf.lite.Interpreter.

The builtin kernels are used without the default XNNPACK delegate, so Invoke runs
tflite::ops::builtin::fully_connected::Eval. The test harness arms a fault injection at the
getppid() call: it corrupts the TfLiteNode* that Eval receives, and Eval faults reading it.

With `--xnnpack` the interpreter keeps its default delegate: XNNPACK takes the model over and
Invoke runs the delegate's kernel node (the injection then corrupts the node its
SubgraphInvoke receives).
"""

import os
import sys

import numpy as np
import tensorflow as tf

weights = tf.constant(np.arange(32, dtype=np.float32).reshape(8, 4) / 32.0)


@tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
def dense(x):
    return tf.nn.relu(tf.matmul(x, weights) + 1.0)


converter = tf.lite.TFLiteConverter.from_concrete_functions([dense.get_concrete_function()], dense)
model = converter.convert()
resolver = (
    tf.lite.experimental.OpResolverType.AUTO
    if "--xnnpack" in sys.argv[1:]
    else tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
)
interpreter = tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=resolver)
interpreter.allocate_tensors()
interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.ones([1, 8], dtype=np.float32))
os.getppid()  # arms the injected fault
interpreter.invoke()
print(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
