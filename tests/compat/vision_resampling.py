"""Resampling and volumetric layers as vision code uses them (only `torch` renamed to
`ember`): a spatial transformer (affine_grid + grid_sample), a 2-d decoder with
nn.Upsample and F.interpolate, a 3-d encoder-decoder (Conv3d, MaxPool3d, ConvTranspose3d,
trilinear Upsample, AdaptiveAvgPool3d), each trained a few steps."""
import ember as torch
import ember.nn as nn
import ember.nn.functional as F


class STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(16, 6))
        self.loc[-1].weight.data.zero_()
        self.loc[-1].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.head = nn.Conv2d(1, 1, 3, padding=1)

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        x = self.head(self.up(x))
        return F.interpolate(x, size=(12, 12), mode="bicubic", align_corners=False)


class Volume(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1, padding_mode="replicate"),
                                 nn.ReLU(), nn.MaxPool3d(2))
        self.dec = nn.Sequential(nn.ConvTranspose3d(4, 4, 2, stride=2), nn.ReLU(),
                                 nn.Upsample(scale_factor=2, mode="trilinear"),
                                 nn.AvgPool3d(2), nn.Conv3d(4, 1, 1))
        self.cls = nn.Sequential(nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(4, 3))

    def forward(self, x):
        h = self.enc(x)
        return self.dec(h), self.cls(h)


def train(model, batches, loss_fn, steps=8):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        for x, y in batches:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return losses


torch.manual_seed(0)
x = torch.rand(4, 1, 8, 8)
target = F.interpolate(x.roll(1, dims=3), size=(12, 12), mode="nearest")
stn = STN()
out = stn(x)
l2d = train(stn, [(x, target)], F.mse_loss)
print(f"stn out {tuple(out.shape)} loss {l2d[0]:.4f} -> {l2d[-1]:.4f}")

v = torch.rand(2, 1, 8, 8, 8)
labels = torch.tensor([0, 2])
vol = Volume()
recon, logits = vol(v)
l3d = train(vol, [(v, (v, labels))],
            lambda out, y: F.mse_loss(out[0], y[0]) + F.cross_entropy(out[1], y[1]))
print(f"volume recon {tuple(recon.shape)} logits {tuple(logits.shape)} "
      f"loss {l3d[0]:.4f} -> {l3d[-1]:.4f}")
