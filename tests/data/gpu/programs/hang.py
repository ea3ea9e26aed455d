"""A CUDA kernel that never ends; the host waits for it in synchronize() until a watchdog kills it."""
import sys

import cupy as cp

if len(sys.argv) > 1 and sys.argv[1] == "blocking":
    cp.cuda.runtime.setDeviceFlags(4)  # cudaDeviceScheduleBlockingSync: the host sleeps in the driver

spin = cp.RawKernel(r'''
extern "C" __global__ void spin_forever(volatile int *flag) {
    while (flag[0] == 0) { }
}
''', "spin_forever")


def wait_for_gpu():
    flag = cp.zeros(1, dtype=cp.int32)
    spin((1,), (32,), (flag,))
    print("launched; waiting for the GPU", flush=True)
    cp.cuda.Device().synchronize()


wait_for_gpu()
