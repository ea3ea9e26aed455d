"""Writing a checkpoint: BundleWriter::Finish serializes the bundle header and entries.

The test harness arms a fault injection at the getppid() call: it corrupts the message
pointer given to MessageLite::SerializeAsString inside BundleWriter::Finish, and protobuf
faults reading the message.
"""

import os

import tensorflow as tf

weights = tf.Variable(tf.ones([4, 4]), name="weights")
bias = tf.Variable(tf.zeros([4]), name="bias")
checkpoint = tf.train.Checkpoint(weights=weights, bias=bias)
prefix = os.path.join(os.getcwd(), "checkpoint", "ckpt")
os.getppid()  # arms the injected fault
checkpoint.write(prefix)
print("unreachable")
