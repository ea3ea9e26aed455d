"""IRFFT with fft_length 0 (a proof-of-concept of TensorFlow's security advisories that still
crashes 2.21): ducc0's planner refuses ("Assertion failure / no zero-sized FFTs") by throwing,
TensorFlow's DUCC wrapper catches the exception, prints it and aborts. The reason is then only
in the exception's text in the heap; the kernel that ran is FFTCPU<false, true, 1> (IRFFT),
reached through the abstract FFTBase::Compute.
"""

import tensorflow as tf

spectrum = tf.zeros([2, 3], tf.complex64)
tf.raw_ops.IRFFT(input=spectrum, fft_length=[0])
print("unreachable")
