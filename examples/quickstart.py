"""The minimal training loop of PyTorch's README, for ember: change the imports, keep
the loop. Random regression data, a two-layer MLP, SGD on the mean squared error."""
import ember as em
from ember import nn
from ember.data import DataLoader, TensorDataset

em.manual_seed(0)
x = em.randn(1024, 10)
true_w = em.randn(10, 1)
y = x @ true_w + 0.1 * em.randn(1024, 1)

loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = em.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.MSELoss()

for epoch in range(10):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
    print(f"epoch {epoch}: mean loss {total / len(x):.4f}")
