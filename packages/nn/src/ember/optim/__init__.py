"""ember.optim: optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam,
RAdam, ASGD, Rprop, LBFGS, SparseAdam) and learning-rate
schedulers (ember.optim.lr_scheduler), with PyTorch's signatures and state_dict format.

    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    opt.zero_grad(); loss.backward(); opt.step()
"""
from ember.optim import lr_scheduler, swa_utils  # noqa: F401
from ember.optim.adadelta import Adadelta  # noqa: F401
from ember.optim.adagrad import Adagrad  # noqa: F401
from ember.optim.adam import Adam, AdamW  # noqa: F401
from ember.optim.adamax import Adamax  # noqa: F401
from ember.optim.asgd import ASGD  # noqa: F401
from ember.optim.lbfgs import LBFGS  # noqa: F401
from ember.optim.nadam import NAdam  # noqa: F401
from ember.optim.optimizer import Optimizer  # noqa: F401
from ember.optim.radam import RAdam  # noqa: F401
from ember.optim.rmsprop import RMSprop  # noqa: F401
from ember.optim.rprop import Rprop  # noqa: F401
from ember.optim.sgd import SGD  # noqa: F401
from ember.optim.sparse_adam import SparseAdam  # noqa: F401
