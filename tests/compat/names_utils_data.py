# torch.utils.data with only the prefix changed.
import ember as torch
from ember.utils.data import DataLoader, Dataset
from ember.utils.data.distributed import DistributedSampler


class Squares(Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor([float(i * i)])


ds = Squares()
sampler = DistributedSampler(ds, num_replicas=2, rank=0, shuffle=True, seed=1)
seen = []
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, _y in DataLoader(ds, batch_size=2, sampler=sampler):
        seen += x.flatten().tolist()
assert len(seen) == 10
import ember.utils.data as data_mod  # noqa: E402

assert data_mod is torch.data
print("ok")
