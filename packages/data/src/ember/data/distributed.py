"""ember.data.distributed (torch.utils.data.distributed): DistributedSampler, the share
of a dataset that one process of a distributed job reads. It is defined in
ember.data.sampler; this is the module path PyTorch code imports it from."""
from ember.data.sampler import DistributedSampler

__all__ = ["DistributedSampler"]
