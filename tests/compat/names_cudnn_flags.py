# Reproducibility and speed flags at the top of training scripts.
import random

import ember as torch

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
torch.use_deterministic_algorithms(True)
random.seed(0)
torch.manual_seed(0)
print("cudnn", torch.backends.cudnn.is_available(), torch.backends.cudnn.version())
conv = torch.nn.Conv2d(1, 2, 3)
x = torch.randn(1, 1, 5, 5)
a, b = conv(x), conv(x)
assert torch.equal(a, b)
assert torch.are_deterministic_algorithms_enabled()
print("ok")
