"""ember.nn: modules, layers, losses and their functional forms, over ember's tensors
and autograd. A PyTorch model runs after changing `torch.nn` to `ember.nn`."""
from ember.nn import (  # noqa: F401
    functional,
    init,
    parallel,  # DistributedDataParallel; ember-mp on use
    utils,
)
from ember.nn._version import __version__  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn.modules import _torch_paths  # noqa: E402
from ember.nn.parameter import Buffer, Parameter  # noqa: F401

_torch_paths.complete()     # each class also at its PyTorch path (nn.modules.activation...)
