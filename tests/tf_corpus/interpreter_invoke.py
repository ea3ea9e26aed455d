"""A tiny dense model (dense_model.py) converted to TFLite and run by tf.lite.Interpreter.

The builtin kernels are used without the default XNNPACK delegate, so Invoke runs
tflite::ops::builtin::fully_connected::Eval. The test harness arms a fault injection at the
getppid() call: it corrupts the TfLiteNode* that Eval receives, and Eval faults reading it.

With `--xnnpack` the interpreter keeps its default delegate: XNNPACK takes the model over and
Invoke runs the delegate's kernel node (the injection then corrupts the node its
SubgraphInvoke receives).

With `--model-file` the model is written to dense.tflite in the working directory and loaded
from there (`model_path=`, the common case): TFLite maps the file read-only, so the tensors'
names and the weights are in that file, not in the core.
"""

import os
import sys

import numpy as np
import tensorflow as tf
from dense_model import dense_tflite_model

model = dense_tflite_model()
resolver = (
    tf.lite.experimental.OpResolverType.AUTO
    if "--xnnpack" in sys.argv[1:]
    else tf.lite.experimental.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
)
if "--model-file" in sys.argv[1:]:
    with open("dense.tflite", "wb") as f:
        f.write(model)
    interpreter = tf.lite.Interpreter(model_path=os.path.abspath("dense.tflite"), experimental_op_resolver_type=resolver)
else:
    interpreter = tf.lite.Interpreter(model_content=model, experimental_op_resolver_type=resolver)
interpreter.allocate_tensors()
interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.ones([1, 8], dtype=np.float32))
os.getppid()  # arms the injected fault
interpreter.invoke()
print(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
