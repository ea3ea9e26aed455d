"""TensorListSetItem with resize_if_index_out_of_bounds and an index near INT32_MAX (TensorFlow
issue #105302, still crashing 2.21): the kernel resizes its std::vector<Tensor> to the index,
the allocation throws, and the exception travels up through the eager runtime - which had
released the GIL - into pybind11's dispatcher. Its exception translator calls PyErr_* without
a thread state: SIGSEGV in CPython, with the kernel's frames already unwound.
"""

import tensorflow as tf

handle = tf.raw_ops.EmptyTensorList(element_dtype=tf.float32, element_shape=tf.TensorShape([2]), max_num_elements=5)
index = tf.constant(2**31 - 1, dtype=tf.int32)
item = tf.constant([1.0, 2.0], dtype=tf.float32)
tf.raw_ops.TensorListSetItem(input_handle=handle, index=index, item=item, resize_if_index_out_of_bounds=True)
print("unreachable")
