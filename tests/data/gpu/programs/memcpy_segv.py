"""A host pointer the process does not own, passed to cudaMemcpy (host to device)."""
import cupy as cp

dst = cp.zeros(1 << 20, dtype=cp.uint8)
WILD = 0x7E0000000000  # not mapped in this process
cp.cuda.runtime.memcpy(dst.data.ptr, WILD, 1 << 20, cp.cuda.runtime.memcpyHostToDevice)
print("copied?!")
