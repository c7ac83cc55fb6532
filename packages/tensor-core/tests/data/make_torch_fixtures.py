"""Writes the PyTorch checkpoints that test_serialization.py and tests/compat load.

Run with PyTorch installed (not a test dependency; ember's tests never import torch):
    python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/python -m pip install torch==2.13.0
    /tmp/torchvenv/bin/python packages/tensor-core/tests/data/make_torch_fixtures.py
The values are formulas (linspace, arange) that the tests compute without torch.
With the `safetensors` package (and NumPy) installed it also writes hf_model.safetensors.

    make_torch_fixtures.py --check FILE...
loads files that ember wrote (em.save(..., format="torch")) with torch.load
(weights_only=True) and prints what PyTorch sees: the check that PyTorch reads ember's
archives.
"""
import os
import sys
from collections import OrderedDict

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def linear_conv():
    """Conv2d(2, 3, 3) -> BatchNorm2d(3) -> ReLU -> Flatten -> Linear(12, 4); every
    parameter and float buffer filled with linspace(-1, 1, numel), in state_dict order."""
    model = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3),
                                torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(12, 4))
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.dtype.is_floating_point:
                t.copy_(torch.linspace(-1, 1, t.numel()).reshape(t.shape))
        model[1].running_var.abs_().add_(0.5)
        model[1].num_batches_tracked.fill_(7)
    model.eval()
    x = torch.linspace(-2, 2, 2 * 2 * 4 * 4).reshape(2, 2, 4, 4)
    torch.save(model.state_dict(), os.path.join(HERE, "torch_linear_conv.pt"))
    with torch.no_grad():
        torch.save({"input": x, "output": model(x)}, os.path.join(HERE, "torch_linear_conv_io.pt"))


def objects():
    w = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    obj = {
        "w": w, "row": w[1], "t": w.t(), "cols": w[:, 1::2],        # views of one storage
        "f64": torch.arange(3, dtype=torch.float64) / 4,
        "i32": torch.tensor([-1, 0, 2 ** 31 - 1], dtype=torch.int32),
        "i16": torch.tensor([-7, 7], dtype=torch.int16),
        "i8": torch.tensor([-128, 127], dtype=torch.int8),
        "u8": torch.tensor([0, 255], dtype=torch.uint8),
        "b": torch.tensor([True, False]),
        "f16": torch.tensor([0.5, -2.0], dtype=torch.float16),
        "i64": torch.tensor(2 ** 40),
        "grad": torch.ones(2, requires_grad=True),
        "param": torch.nn.Parameter(torch.full((2,), 3.0)),
        "meta": OrderedDict([("size", torch.Size([2, 3])), ("dtype", torch.float16),
                             ("device", torch.device("cpu")),
                             ("nested", [1, (2.5, "x"), {"k": None}])]),
        "set": {1, 2},
    }
    torch.save(obj, os.path.join(HERE, "torch_objects.pt"))


def unsupported():
    torch.save({"x": torch.ones(2, dtype=torch.bfloat16)}, os.path.join(HERE, "torch_bfloat16.pt"))
    torch.save({"x": torch.ones(2)}, os.path.join(HERE, "torch_legacy.pt"),
               _use_new_zipfile_serialization=False)


def unsigned():
    torch.save({"u16": torch.tensor([1, 65535], dtype=torch.uint16),
                "u32": torch.tensor([1, 2 ** 32 - 1], dtype=torch.uint32),
                "u64": torch.tensor([1, 2 ** 63], dtype=torch.uint64)},
               os.path.join(HERE, "torch_uints.pt"))


def hugging_face():
    try:
        from safetensors.torch import save_file
    except ImportError:
        print("safetensors not installed: hf_model.safetensors not written")
        return
    save_file({"embed.weight": torch.arange(6.0).reshape(2, 3),
               "ids": torch.arange(3, dtype=torch.int64),
               "scale": torch.tensor([0.5, 2.0], dtype=torch.float16),
               "mask": torch.tensor([True, False])},
              os.path.join(HERE, "hf_model.safetensors"), metadata={"format": "pt"})


def check(paths):
    for path in paths:
        obj = torch.load(path)
        print(path, "->", obj)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        check(sys.argv[2:])
        sys.exit(0)
    torch.manual_seed(0)
    hugging_face()
    linear_conv()
    objects()
    unsupported()
    unsigned()
