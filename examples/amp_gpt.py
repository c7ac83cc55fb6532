"""Mixed-precision training of a small GPT (2 layers, d=128; examples/tiny_gpt.py's model),
the way PyTorch users write it:

    dtype = "bfloat16" if bf16 is available else "float16"
    ctx = torch.autocast(device_type, dtype=...)
    scaler = torch.amp.GradScaler(device_type, enabled=(dtype == "float16"))

It trains the same model from the same seed in float32 and under autocast (float16 with
GradScaler; bfloat16 without one, once ember has em.bfloat16) and prints each run's
final loss and the ratio to float32's.

    python examples/amp_gpt.py [--steps 200] [--device cpu] [--dtypes float16,bfloat16]

On OpenCL: `--device opencl --dtypes bfloat16` (the 200-step run; the test suite runs
30 steps of it, packages/nn/tests/test_amp.py, and asks for 2% of float32's loss).
"""
import argparse
import codecs
import contextlib
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember as torch  # noqa: E402
from tiny_gpt import GPT  # noqa: E402


def zen():
    with contextlib.redirect_stdout(io.StringIO()):
        import this
    return codecs.decode(this.s, "rot13")


def train(dtype=None, steps=200, device="cpu", seed=0, batch_size=8, block_size=32,
          n_embd=128, lr=2e-3, tail=20, init_scale=2.0 ** 16):
    """Train from `seed`; dtype None: float32, else autocast in dtype (float16 also with
    a GradScaler). Returns (the mean loss of the last `tail` steps, steps skipped)."""
    text = zen()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    torch.manual_seed(seed)
    model = GPT(len(chars), block_size, n_layer=2, n_head=4, n_embd=n_embd).to(device)
    opt = model.configure_optimizers(0.1, lr, (0.9, 0.95))
    use_amp = dtype is not None
    scaler = torch.amp.GradScaler(device, init_scale=init_scale,
                                  enabled=use_amp and dtype is torch.float16)
    ctx = torch.autocast(device, dtype=dtype) if use_amp else contextlib.nullcontext()
    g = torch.Generator().manual_seed(seed + 1)
    losses, skipped = [], 0
    for _ in range(steps):
        ix = torch.randint(len(data) - block_size, (batch_size,), generator=g).tolist()
        x = torch.stack([data[i:i + block_size] for i in ix]).to(device)
        y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix]).to(device)
        with ctx:
            _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        skipped += scaler.get_scale() < before
        losses.append(loss.item())
    return sum(losses[-tail:]) / tail, skipped


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtypes", default="float16,bfloat16")
    ap.add_argument("--init_scale", type=float, default=2.0 ** 16,
                    help="GradScaler's first scale (PyTorch's default 2**16 overflows this "
                         "model's first float16 backward passes: those steps are skipped)")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    ref, _ = train(None, args.steps, args.device)
    print(f"float32 : loss {ref:.4f} ({time.perf_counter() - t:.1f} s)")
    for name in args.dtypes.split(","):
        dt = getattr(torch, name, None)
        if dt is None:
            print(f"{name}: not in this ember build, skipped")
            continue
        t = time.perf_counter()
        loss, skipped = train(dt, args.steps, args.device, init_scale=args.init_scale)
        print(f"{name:8s}: loss {loss:.4f}, {loss / ref:.4f} x float32's, {skipped} steps "
              f"skipped ({time.perf_counter() - t:.1f} s)")


if __name__ == "__main__":
    main()
