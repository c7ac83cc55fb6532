"""torch.nn.modules.batchnorm's classes, re-exported from where ember defines them
(ember.nn.modules._torch_paths lists them)."""
from ember.nn.modules._torch_paths import reexport

__all__ = reexport(globals(), "batchnorm")
