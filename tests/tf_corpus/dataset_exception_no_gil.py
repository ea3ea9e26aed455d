"""tf.data.FixedLengthRecordDataset with num_parallel_reads near INT32_MAX (TensorFlow issue
#113160, 2.21): making the iterator, the ParallelInterleaveDataset iterator's constructor sizes
a std::vector by it and the allocation throws; the exception reaches pybind11's dispatcher,
whose translator calls into the interpreter without the GIL: SIGSEGV in CPython, the dataset
op's frames already unwound.
"""

import os
import tempfile

import tensorflow as tf

path = os.path.join(tempfile.mkdtemp(), "records.bin")
with open(path, "wb") as f:
    f.write(bytes(range(16)) * 4)
records = tf.data.FixedLengthRecordDataset([path], record_bytes=4, buffer_size=2**40, num_parallel_reads=2**31 - 1)
for record in records:
    print(record)
print("unreachable")
