"""One process of a multi-process JAX job on the CPU, started the way a JAX program is started by
hand or by a plain launcher: the coordinator's address, the number of processes and this one's
id on its command line, handed to `jax.distributed.initialize`. Each process has one CPU device;
the job's mesh spans them all, and cross-process collectives run over gloo on loopback. All
processes run one all-reduce step together, then the scenario:

    one_crash    process 1 dereferences a null pointer (through ctypes) while the others wait
                 for it in the next step's all-reduce. It forked a data-loading worker earlier
                 that outlives it and holds its connections (as a data loader's workers inherit
                 them), so the others are not told of the death and wait, as they would for a
                 lost host
    deadlock     every process waits at a barrier of the job's coordination service that the
                 others never reach (each names its own): nothing crashes, all hang

    jax_process.py SCENARIO ROOT --coordinator_address=HOST:PORT --num_processes=N --process_id=I

Each process works in ROOT/rankI (its core is written there) and leaves `pid` there at start,
`helper` with the worker's pid, and `waiting` right before its last call.
"""

import argparse
import os
import sys
import time

from rank_actions import crash, data_worker

parser = argparse.ArgumentParser()
parser.add_argument("scenario")
parser.add_argument("root")
parser.add_argument("--coordinator_address", required=True)
parser.add_argument("--num_processes", type=int, required=True)
parser.add_argument("--process_id", type=int, required=True)
args = parser.parse_args()
rank = args.process_id
rank_dir = os.path.join(args.root, f"rank{rank}")
os.makedirs(rank_dir, exist_ok=True)
os.chdir(rank_dir)
with open("pid", "w") as f:
    f.write(str(os.getpid()))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_cpu_collectives_implementation", "gloo")  # the default in recent versions; older had none
jax.distributed.initialize(coordinator_address=args.coordinator_address, num_processes=args.num_processes,
                           process_id=rank)
mesh = Mesh(np.array(jax.devices()), ("processes",))


@jax.jit
def all_reduce(x):
    return jnp.sum(x, axis=0)


def train_step(step: int) -> np.ndarray:
    """Every process gives its row; the sum over the job's mesh is an all-reduce across processes."""
    local = np.full((1, 4), float(rank + step), dtype=np.float32)
    batch = multihost_utils.host_local_array_to_global_array(local, mesh, P("processes"))
    total = all_reduce(batch)
    return np.asarray(multihost_utils.process_allgather(total, tiled=True))


print(f"process {rank}: step 0 done: {train_step(0)}", flush=True)


if args.scenario == "one_crash":
    if rank == 1:
        data_worker()
        open("waiting", "w").close()
        time.sleep(1.0)  # the others are in the all-reduce by now
        crash()
    open("waiting", "w").close()
    train_step(1)
elif args.scenario == "deadlock":
    open("waiting", "w").close()
    # The coordination service's client, as JAX's own checkpointing reaches it for its barriers.
    client = jax._src.distributed.global_state.client
    client.wait_at_barrier(f"checkpoint saved by process {rank}", timeout_in_ms=600_000)
print("unreachable", flush=True)
sys.exit(1)
