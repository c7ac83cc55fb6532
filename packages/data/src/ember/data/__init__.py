"""ember.data: datasets, samplers and the DataLoader (PyTorch's torch.utils.data), with
worker processes that hand batches over through shared memory."""
from ember.data._version import __version__  # noqa: F401
from ember.data.collate import default_collate, default_convert  # noqa: F401
from ember.data.dataloader import DataLoader  # noqa: F401
from ember.data.dataset import (  # noqa: F401
    ChainDataset,
    ConcatDataset,
    Dataset,
    GatheredSamples,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ember.data.sampler import (  # noqa: F401
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from ember.data.shared import SharedDict, SharedList  # noqa: F401
from ember.data.worker import WorkerInfo, get_worker_info, shard_for_worker  # noqa: F401

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
    "ChainDataset", "Subset", "random_split", "GatheredSamples",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler", "DistributedSampler",
    "default_collate", "default_convert", "WorkerInfo", "get_worker_info",
    "shard_for_worker", "DataLoader", "SharedList", "SharedDict",
]
