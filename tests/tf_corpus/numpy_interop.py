"""Turning an eager tensor into a NumPy array (EagerTensor.numpy()).

The test harness arms a fault injection at the getppid() call: it corrupts the TF_Tensor
handle pointer given to tensorflow::TF_TensorToMaybeAliasedPyArray, which faults reading it.
"""

import os

import tensorflow as tf

activations = tf.nn.relu(tf.random.stateless_normal([8, 8], seed=[1, 2]))
os.getppid()  # arms the injected fault
array = activations.numpy()
print(array.sum())
