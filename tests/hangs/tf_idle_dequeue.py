"""TensorFlow waits for work nobody will do: after real work (the pools started), the main
thread dequeues from an empty queue that no one fills. Every pool thread is idle."""

import tensorflow as tf

x = tf.random.uniform((512, 512))
print(float(tf.reduce_sum(tf.matmul(x, x))), flush=True)
queue = tf.queue.FIFOQueue(4, tf.float32)
print("ready", flush=True)
queue.dequeue()  # never returns
