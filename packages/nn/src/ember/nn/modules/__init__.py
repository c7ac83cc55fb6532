from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.modules.container import *  # noqa: F401,F403
from ember.nn.modules.linear import *  # noqa: F401,F403
from ember.nn.modules.activation import *  # noqa: F401,F403
from ember.nn.modules.rnn import *  # noqa: F401,F403
