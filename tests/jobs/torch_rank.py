"""One rank of a PyTorch job on the gloo backend, started by torchrun (RANK, WORLD_SIZE,
MASTER_ADDR, TORCHELASTIC_RUN_ID in its environment). All ranks run one all-reduce together,
then the scenario:

    one_crash    rank 1 dereferences a null pointer (through ctypes) while rank 0 waits for it
                 in the next all-reduce. Rank 1 forked a data-loading worker earlier that
                 outlives it and holds its connections (as a DataLoader's workers inherit
                 them), so rank 0 is not told of the death and waits, as it would on NCCL.
    same_crash   every rank dereferences the same null pointer
    deadlock     each rank waits to receive from the other: nothing crashes, all ranks hang

    torch_rank.py SCENARIO ROOT

Each rank works in ROOT/rankN (its core is written there) and leaves `pid` there at start,
`helper` with the worker's pid, and `waiting` right before its last call.
"""

import os
import sys
import time

from rank_actions import crash, data_worker

scenario, root = sys.argv[1], sys.argv[2]
rank = int(os.environ["RANK"])
rank_dir = os.path.join(root, f"rank{rank}")
os.makedirs(rank_dir, exist_ok=True)
os.chdir(rank_dir)
with open("pid", "w") as f:
    f.write(str(os.getpid()))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo")
tensor = torch.ones(4)
dist.all_reduce(tensor)
print(f"rank {rank}: step 0 done", flush=True)


if scenario == "one_crash":
    if rank == 1:
        data_worker()
        open("waiting", "w").close()
        time.sleep(1.0)  # rank 0 is in the all-reduce by now
        crash()
    open("waiting", "w").close()
    dist.all_reduce(tensor)
elif scenario == "same_crash":
    open("waiting", "w").close()
    crash()
elif scenario == "deadlock":
    open("waiting", "w").close()
    dist.recv(tensor, src=1 - rank)
print("unreachable", flush=True)
