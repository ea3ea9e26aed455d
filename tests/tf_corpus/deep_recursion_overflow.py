"""SerializeTensor of a TensorList nested 60,000 lists deep (built by a while_loop of
EmptyTensorList / TensorListPushBack raw ops): encoding a variant encodes the variants it holds,
one recursion per level, until the main thread's 8 MiB stack runs out some 70,000 frames down.
The op that started it, SerializeTensorOp::Compute, is at the far end of the stack.
"""

import tensorflow as tf

DEPTH = 60_000


def empty(dtype):
    return tf.raw_ops.EmptyTensorList(element_shape=tf.constant([], tf.int32), max_num_elements=-1, element_dtype=dtype)


@tf.function
def nested(depth):
    def body(i, handle):
        return i + 1, tf.raw_ops.TensorListPushBack(input_handle=empty(tf.variant), tensor=handle)

    _, handle = tf.while_loop(lambda i, handle: i < depth, body, [tf.constant(0), empty(tf.float32)])
    return handle


tf.raw_ops.SerializeTensor(tensor=nested(tf.constant(DEPTH)))
print("unreachable")
