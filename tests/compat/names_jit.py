# Model code sprinkled with torch.jit decorators, run eagerly.
from typing import Final

import ember as torch


class Block(torch.nn.Module):
    scale: Final[float] = 2.0

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    @torch.jit.ignore
    def debug(self):
        return "debug"

    @torch.jit.unused
    def unused_path(self, x):
        return x

    @torch.jit.export
    def double(self, x):
        return x * self.scale

    def forward(self, x):
        if not torch.jit.is_scripting() and not torch.jit.is_tracing():
            x = self.double(x)
        return self.lin(x)


b = Block()
y = b(torch.ones(1, 3))
assert b.debug() == "debug" and torch.jit.Final is Final
try:
    torch.jit.script(b)
except NotImplementedError as e:
    print("script:", str(e).split(":")[0])
print("ok")
