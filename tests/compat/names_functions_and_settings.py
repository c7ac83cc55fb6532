# Top-level torch.* functions and settings as training scripts use them: matmul precision,
# the default device context, torch.func per-sample gradients with vmap, SparseAdam on
# an embedding, padding_mode convolutions, and the torch-level nn functions.
import ember as torch
import ember.nn as nn
from ember.func import grad, vmap

torch.set_float32_matmul_precision("high")
assert torch.get_float32_matmul_precision() == "high"
torch.set_float32_matmul_precision("highest")

with torch.device("cpu"):
    w = torch.zeros(3)
assert w.device == torch.get_default_device()

# per-sample gradients, the torch.func tutorial's pattern
weights = torch.randn(3, dtype=torch.float64)


def loss_fn(w, x, y):
    return ((x @ w - y) ** 2).mean()


xs, ys = torch.randn(8, 3, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(weights, xs, ys)
assert tuple(per_sample.shape) == (8, 3)
full = grad(lambda w: sum(loss_fn(w, xs[i], ys[i]) for i in range(8)) / 8)(weights)
assert torch.allclose(per_sample.mean(0), full)

# SparseAdam for an embedding, Adam for the rest
emb = nn.Embedding(10, 4)
head = nn.Conv1d(4, 2, 3, padding=1, padding_mode="reflect")
opt_sparse = torch.optim.SparseAdam(list(emb.parameters()), lr=0.05)
opt_dense = torch.optim.Adam(head.parameters(), lr=0.05)
tokens = torch.tensor([[1, 2, 3, 4], [4, 3, 2, 1]])
target = torch.randn(2, 2, 4)
untouched = emb.weight[0].detach().clone()     # row 0 is never looked up
losses = []
for _ in range(20):
    opt_sparse.zero_grad()
    opt_dense.zero_grad()
    out = head(emb(tokens).transpose(1, 2))
    loss = torch.nn.functional.mse_loss(out, target)
    loss.backward()
    opt_sparse.step()
    opt_dense.step()
    losses.append(loss.item())
assert losses[-1] < losses[0]
assert torch.equal(untouched, emb.weight[0].detach())

x = torch.linspace(-2, 2, 5)
print("celu", [round(v, 4) for v in torch.celu(x).tolist()])
print("kl", round(torch.kl_div(torch.log_softmax(x, 0), torch.softmax(x.flip(0), 0), 1).item(), 4))
print("grad", torch.gradient(x * x)[0].tolist())
print("inference", torch.is_inference(torch.ones(1)))
print("ok")
