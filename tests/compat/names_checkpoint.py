# Gradient checkpointing of a deep stack, as memory-hungry training scripts do.
import ember as torch
from ember.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(0)
blocks = torch.nn.ModuleList(
    torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Dropout(0.1))
    for _ in range(4))
x = torch.randn(5, 8, requires_grad=True)
h = x
for blk in blocks:
    h = checkpoint(blk, h, use_reentrant=False)
h.sum().backward()
seq = torch.nn.Sequential(*blocks)
out = checkpoint_sequential(seq, 2, x, use_reentrant=False)
out.mean().backward()
assert all(p.grad is not None for p in blocks.parameters())
print("ok")
