"""ember.data: datasets, samplers and the DataLoader (PyTorch's torch.utils.data)."""
from ember.data._version import __version__  # noqa: F401
from ember.data.dataset import (  # noqa: F401
    Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, random_split)
from ember.data.sampler import (  # noqa: F401
    Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler)
from ember.data.dataloader import DataLoader, default_collate  # noqa: F401
