"""GPU processes: what the GPU did (the driver's GPU core dump) and where the host stood
(the thread blocked in a CUDA or HIP call, and its Python line)."""
