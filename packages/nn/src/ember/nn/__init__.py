"""ember.nn: modules, layers, losses and their functional forms, over ember's tensors
and autograd. A PyTorch model runs after changing `torch.nn` to `ember.nn`."""
from ember.nn._version import __version__  # noqa: F401
from ember.nn.parameter import Parameter, Buffer  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn import functional, init  # noqa: F401
from ember.nn import utils  # noqa: F401
from ember.nn import parallel  # noqa: F401  (DistributedDataParallel; ember-mp on use)
