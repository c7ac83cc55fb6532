"""ember.nn.parallel: DistributedDataParallel (over ember.distributed, from the ember-mp
package, imported when a DistributedDataParallel is made)."""
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
