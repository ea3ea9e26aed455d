"""tf.data.FixedLengthRecordDataset with a buffer_size near sys.maxsize (TensorFlow issue
#113160 and pull request #124245, 2.21): the iterator's tsl::io::InputBuffer allocates the buffer
with operator new, which throws std::bad_alloc on the prefetch thread; nothing catches it there
and std::terminate aborts. The faulting frames are the allocation's; the dataset op is the
iterator's class, FixedLengthRecordDatasetOp::Dataset::UncompressedIterator.
"""

import os
import sys
import tempfile

import tensorflow as tf

path = os.path.join(tempfile.mkdtemp(), "records.bin")
with open(path, "wb") as f:
    f.write(bytes(range(16)) * 4)
records = tf.data.FixedLengthRecordDataset([path], record_bytes=4, buffer_size=sys.maxsize - 4)
for record in records:
    print(record)
print("unreachable")
