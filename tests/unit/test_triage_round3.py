"""General causes found on the tuning half of issue 46's third blind round
(tests/data/blind/issue46_round3.toml), each tested on a text of its own, and the round's numbers.

The round: 41 crash texts from public threads (TF kernels' CHECKs, TFLite and TFLite Micro, XLA and
JAX, tf.data service, custom-op and loader errors, cuDNN and NCCL errors, glibc and tcmalloc heap
aborts, protobuf FATALs and a protobuf hang, illegal instructions), labelled before the tool ran and
split by the parity of the SHA-256 of their source URL (19 to tune on, 22 held out). Before any
change: tune category 12/19, fault kind 15/19, 4 refused; held out 14/22, 16/22, 4 refused. After
the causes below: tune 18/19, 19/19, none refused; held out 14/22, 16/22, 4 refused.
"""

from __future__ import annotations

import pytest

from coreanalyze.triage import triage_text
from tests.support import blindsets

# --- NCCL's errors in the words its callers print ------------------------------------------------

def test_tensorflows_error_invoking_nccl_is_a_stated_gpu_error():
    text = """\
2024-02-11 09:14:52.118304: W tensorflow/core/framework/op_kernel.cc:1828] OP_REQUIRES failed at collective_ops.cc:91 : UNKNOWN: Error invoking NCCL: unhandled system error
Traceback (most recent call last):
  File "train_dist.py", line 88, in <module>
    loss = strategy.run(step, args=(batch,))
tensorflow.python.framework.errors_impl.UnknownError: Error invoking NCCL: unhandled system error [Op:CollectiveReduceV2]
"""
    c = triage_text(text, "nccl_invoking.txt").classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "unknown"), c.evidence


def test_a_root_error_that_is_nccls_unhandled_cuda_error_is_a_stated_gpu_error():
    text = """\
tensorflow.python.framework.errors_impl.InternalError: 1 root error(s) found.
  (0) Internal:  unhandled cuda error
         [[node replica_1/NcclAllReduce (defined at train.py:120) ]]
0 successful operations.
0 derived errors ignored.
"""
    c = triage_text(text, "nccl_root_error.txt").classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "unknown"), c.evidence


def test_an_uncaught_nccl_exception_in_any_case_is_the_gpu_stacks():
    text = """\
Epoch 3/40
terminate called after throwing an instance of 'std::runtime_error'
  what():  NCCL Error 2: unhandled system error
./run_train.sh: line 12: 40411 Aborted                 (core dumped) python train.py
"""
    c = triage_text(text, "nccl_terminate.txt").classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "uncaught-exception"), c.evidence


# --- a library that would not load: Windows' words and a package's own -----------------------------

def test_windows_dll_load_failed_is_a_stated_library_load_error():
    text = """\
Traceback (most recent call last):
  File "C:\\tools\\venv\\lib\\site-packages\\tflite_runtime\\interpreter.py", line 33, in <module>
    from tflite_runtime import _pywrap_tensorflow_interpreter_wrapper as _interpreter_wrapper
ImportError: DLL load failed while importing _pywrap_tensorflow_interpreter_wrapper: The specified module could not be found.
"""
    c = triage_text(text, "dll_load_failed.txt").classification
    assert (c.category, c.fault_kind) == ("library-load", "unknown"), c.evidence


def test_a_packages_own_could_not_be_loaded_is_a_stated_library_load_error():
    text = """\
>>> import lightgbm
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
lightgbm.basic.LightGBMError: Shared library (liblightgbm.so) could not be loaded: libgomp.so.1
"""
    c = triage_text(text, "could_not_be_loaded.txt").classification
    assert (c.category, c.fault_kind) == ("library-load", "unknown"), c.evidence


def test_a_log_line_about_an_optional_library_that_is_absent_names_no_load_failure():
    # glibc's "cannot open shared object file" is logged for optional libraries (TensorFlow's
    # dso_loader for the GPU's); the process goes on and dies elsewhere.
    text = """\
2023-05-02 10:11:12.000001: W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory
2023-05-02 10:11:15.000002: F tensorflow/core/kernels/strided_slice_op.cc:105] Check failed: tmp.CopyFrom(input.Slice(begin[0], end[0]), final_shape)
Aborted (core dumped)
"""
    c = triage_text(text, "dso_warning.txt").classification
    assert (c.category, c.fault_kind) == ("kernel-compute", "check-failure"), c.evidence


# --- jit_compile=True: the ops a text names beside it ran as XLA's code -----------------------------

JIT_TEXT = """\
Segmentation fault with tf.function(jit_compile=True) on tf.math.cumprod of a reversed tensor
The same function works in eager mode; with jit_compile=True the process dies:
Segmentation fault (core dumped)
"""


def test_a_crash_of_a_function_compiled_with_jit_compile_is_xla():
    c = triage_text(JIT_TEXT, "jit_compile.txt").classification
    assert (c.category, c.fault_kind) == ("xla", "invalid-access"), c.evidence


def test_without_jit_compile_the_op_named_is_its_kernel():
    text = JIT_TEXT.replace("tf.function(jit_compile=True) on ", "").replace("; with jit_compile=True the process dies", ", in a graph the process dies")
    c = triage_text(text, "no_jit_compile.txt").classification
    assert (c.category, c.fault_kind) == ("kernel-compute", "invalid-access"), c.evidence


# --- the round's numbers --------------------------------------------------------------------------

TUNE, HELD_OUT = blindsets.halves("issue46_round3.toml")


def test_the_split_is_the_one_fixed_before_the_verdicts():
    assert (len(TUNE), len(HELD_OUT)) == (19, 22)


# (category right, fault kind right, refused) after the causes above: floors that must hold. The
# held-out half's went from (14, 16, 4) to (15, 18, 2) when any exception a program ended with was
# read as a stated error (evidence.toml's error-python-raised) instead of refused.
@pytest.mark.parametrize("reports, floor", [(TUNE, (18, 19, 0)), (HELD_OUT, (16, 20, 0))], ids=["tune", "held-out"])
def test_each_half_keeps_its_numbers(reports, floor):
    category, kind, refused = blindsets.score(reports)
    assert category >= floor[0] and kind >= floor[1] and refused <= floor[2], (category, kind, refused)
