# Imports from torch.nn.modules submodules, as model libraries write them.
import ember as torch
from ember.nn.modules.activation import MultiheadAttention
from ember.nn.modules.batchnorm import BatchNorm2d, _BatchNorm
from ember.nn.modules.container import Sequential
from ember.nn.modules.conv import Conv2d
from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
from ember.nn.modules.loss import CrossEntropyLoss, _Loss
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import LayerNorm
from ember.nn.modules.sparse import Embedding


class FrozenBN(_BatchNorm):
    pass


class Net(Module):
    def __init__(self):
        super().__init__()
        self.body = Sequential(Conv2d(3, 4, 3), BatchNorm2d(4))
        self.emb = Embedding(10, 8)
        self.attn = MultiheadAttention(8, 2, batch_first=True)
        self.norm = LayerNorm(8)
        self.out = NonDynamicallyQuantizableLinear(8, 10)

    def forward(self, img, tokens):
        feat = self.body(img).mean()
        h = self.emb(tokens)
        h, _ = self.attn(h, h, h)
        return self.out(self.norm(h)) + feat


net = Net()
logits = net(torch.randn(2, 3, 6, 6), torch.randint(0, 10, (2, 5)))
loss = CrossEntropyLoss()(logits.reshape(-1, 10), torch.randint(0, 10, (10,)))
loss.backward()
assert isinstance(CrossEntropyLoss(), _Loss)
print("ok")
