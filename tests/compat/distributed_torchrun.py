"""A torchrun script as PyTorch users write it (only `torch` renamed to `ember`):

    torchrun --standalone --nproc_per_node 2 distributed_torchrun.py
    python -m ember.distributed.run --standalone --nproc_per_node 2 distributed_torchrun.py
"""
import os

import ember as torch
import ember.distributed as dist
import ember.nn as nn

local_rank = int(os.environ["LOCAL_RANK"])
rank = int(os.environ["RANK"])
world_size = int(os.environ["WORLD_SIZE"])
assert os.environ["MASTER_ADDR"] and int(os.environ["MASTER_PORT"]) > 0

backend = "nccl" if torch.cuda.is_available() else "gloo"
dist.init_process_group(backend=backend, init_method="env://")
assert dist.get_rank() == rank and dist.get_world_size() == world_size

torch.manual_seed(0)
model = nn.Linear(4, 1)
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
x = torch.full((2, 4), float(rank + 1))
loss = ddp(x).sum()
loss.backward()
opt.step()

t = torch.tensor([float(rank)])
dist.all_reduce(t, op=dist.ReduceOp.SUM)
grads = [p.grad.clone() for p in model.parameters()]
every = [torch.zeros_like(grads[0]) for _ in range(world_size)]
dist.all_gather(every, grads[0])
same = all(bool((g == grads[0]).all()) for g in every)
print(f"rank {rank}/{world_size} local {local_rank} backend {dist.get_backend()} "
      f"sum {t.item():g} grads-equal {same}")
dist.destroy_process_group()
