"""LiteRT's TFLite interpreter running a model on an Arm device.

argv: the .tflite model, the site-packages holding ai_edge_litert and numpy. The builtin
kernels are used without the default XNNPACK delegate, so Invoke runs
tflite::ops::builtin::fully_connected::Eval, where the test harness injects the fault
(tests/armcores.py): by itself the script prints the model's output and exits.
"""

import sys

sys.path.insert(0, sys.argv[2])

import numpy as np  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402


def run(model_path):
    interpreter = Interpreter(model_path=model_path, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.ones([1, 8], dtype=np.float32))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


if __name__ == "__main__":
    print(run(sys.argv[1]))
