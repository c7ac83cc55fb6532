#!/usr/bin/env python
"""Whole training steps of well-known models: ember beside PyTorch, each in its own process.

    python benchmarks/bench_models.py [--quick] [--threads 1,2] [--filter NAME[,NAME]]
                                      [--rounds N] [--profile] [--torch-python PATH]
                                      [--memory-steps N] [--json PATH]

A step is what a training loop runs: zero_grad, forward, loss, backward, (gradient
clipping,) optimizer step. Cases:

- gpt: nanoGPT's character-level configuration: vocab 65, block 256, 6 layers, 6 heads,
  d=384, batch 8; token + position embeddings, causal self-attention through
  F.scaled_dot_product_attention(is_causal=True), LayerNorm, exact-GELU MLP, the head
  tied to the token embedding, AdamW(lr 1e-3, betas (0.9, 0.99)) with weight decay 0.1
  on the matrices and 0 on biases and norms, clip_grad_norm_(1.0).
- gpt_small: the same GPT at block 64, 2 layers, 2 heads, d=64 (dispatch-bound).
- lstm_lm: PyTorch's word_language_model: Embedding(10000, 200), a 2-layer LSTM 200->200,
  Linear(200, 10000), bptt 35 x batch 20, the hidden state carried (detached) from step
  to step, cross-entropy, clip_grad_norm_(0.25), SGD(lr 20).
- resnet18: a CIFAR ResNet-18 (3x3 stem, 4 stages of 2 BasicBlocks 64-128-256-512 with
  BatchNorm, average pool, Linear 512->10) on 64x3x32x32, cross-entropy, SGD(lr 0.1,
  momentum 0.9, weight decay 5e-4).
- mlp, cnn: bench_optim.py's train_mlp_sgd and train_cnn_sgd.
- convnet / convnet_cl: a small conv net (Conv 3->32 3x3, BatchNorm, ReLU, MaxPool 2,
  Conv 32->64 3x3, BatchNorm, ReLU, MaxPool 2, Conv 64->64 1x1, ReLU, adaptive average
  pool, Linear 64->10) on 32x3x32x32, SGD(momentum 0.9); convnet_cl has the model and
  the input in channels_last (model.to(memory_format=...), PyTorch's recipe).
- gpt_amp_bf16: examples/amp_gpt.py's GPT (2 layers, 4 heads, d=128, block 32, batch 8)
  with the forward and loss under autocast("cpu", dtype=bfloat16), AdamW, clipping.

Every library runs in its own worker process (`import torch` changes the process: see
the README), started once per case and thread setting with every pool's thread variable
set (harness.thread_env). The workers build the same model from the same NumPy weights
and data (float32; dropout 0), check that their first losses agree, then take turns:
each round every worker runs a few steps (the one that starts alternates), timing
forward (with the loss), backward and the optimizer (clipping, step, zero_grad)
separately with perf_counter; medians over rounds. pt/em = torch's time / ember's
(> 1: ember faster); the target is ember <= 0.8x torch's step at 1 thread
(pt/em >= 1.25) and <= 1.0x at 2 threads.

--profile prints each library's top ops for one case: torch.profiler's self CPU time,
and for ember cProfile's own time per function (ember's op entries and kernels; a
Cython op called through a Tensor operator is charged to its caller). Peak RSS (the
workers' ru_maxrss) and the RSS growth over the timed steps (or --memory-steps more
steps) are shown beside the times.

PyTorch is found in this interpreter or, failing that, in --torch-python (default
$EMBER_BENCH_TORCH_PYTHON, then /tmp/torchvenv/bin/python when it exists); without it
only ember's times are shown.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import subprocess
import sys

import harness

CASES = ("gpt", "gpt_small", "lstm_lm", "resnet18", "mlp", "cnn", "convnet", "convnet_cl",
         "gpt_amp_bf16")
# steps per sample: about 0.3 s (0.1 s quick) of a step at 1 thread
STEPS = {"gpt": 1, "gpt_small": 10, "lstm_lm": 3, "resnet18": 1, "mlp": 20, "cnn": 10,
         "convnet": 3, "convnet_cl": 3, "gpt_amp_bf16": 5}
QUICK_STEPS = {"gpt": 1, "gpt_small": 4, "lstm_lm": 1, "resnet18": 1, "mlp": 8, "cnn": 4,
               "convnet": 1, "convnet_cl": 1, "gpt_amp_bf16": 2}


# ---------------------------------------------------------------------- models

def gpt_config(name):
    if name == "gpt":
        return dict(vocab=65, block=256, n_layer=6, n_head=6, n_embd=384, batch=8)
    if name in ("gpt_amp_bf16", "gpt_amp_f16"):
        return dict(vocab=65, block=32, n_layer=2, n_head=4, n_embd=128, batch=8)
    return dict(vocab=65, block=64, n_layer=2, n_head=2, n_embd=64, batch=8)


def build_gpt(mod, cfg):
    nn, F = mod.nn, mod.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.n_head = h

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class MLP(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.c_fc = nn.Linear(d, 4 * d)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * d, d)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = CausalSelfAttention(d, h)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = MLP(d)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            d = cfg["n_embd"]
            self.wte = nn.Embedding(cfg["vocab"], d)
            self.wpe = nn.Embedding(cfg["block"], d)
            self.h = nn.ModuleList([Block(d, cfg["n_head"]) for _ in range(cfg["n_layer"])])
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, cfg["vocab"], bias=False)
            self.lm_head.weight = self.wte.weight      # tied, as nanoGPT

        def forward(self, idx, targets):
            pos = mod.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


def build_lstm(mod):
    nn, F = mod.nn, mod.nn.functional

    class RNNModel(nn.Module):
        def __init__(self, ntoken=10000, ninp=200, nhid=200, nlayers=2):
            super().__init__()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers)
            self.decoder = nn.Linear(nhid, ntoken)
            self.ntoken = ntoken

        def forward(self, x, hidden, targets):
            out, hidden = self.rnn(self.encoder(x), hidden)
            logits = self.decoder(out).view(-1, self.ntoken)
            return F.cross_entropy(logits, targets.view(-1)), hidden

    return RNNModel()


def build_resnet18(mod):
    nn, F = mod.nn, mod.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.linear = nn.Linear(512, 10)

        def forward(self, x):
            out = self.layers(F.relu(self.bn1(self.conv1(x))))
            out = F.adaptive_avg_pool2d(out, 1).flatten(1)
            return self.linear(out)

    return ResNet18()


def fill_weights(mod, model, rng, np):
    """The same weights in either library: per module, in registration order, a norm's
    weight 1 and bias 0, other matrices N(0, 1/fan_in), other vectors U(-0.1, 0.1)."""
    nn = mod.nn
    norms = (nn.LayerNorm, nn.BatchNorm2d)
    seen = set()
    with mod.no_grad():
        for m in model.modules():
            for name, p in m.named_parameters(recurse=False):
                if id(p) in seen:
                    continue
                seen.add(id(p))
                shape = tuple(p.shape)
                if isinstance(m, norms):
                    w = np.full(shape, 1.0 if name == "weight" else 0.0, dtype=np.float32)
                elif len(shape) >= 2:
                    fan_in = math.prod(shape[1:])
                    w = (rng.standard_normal(shape) / math.sqrt(fan_in)).astype(np.float32)
                else:
                    w = rng.uniform(-0.1, 0.1, shape).astype(np.float32)
                p.copy_(mod.from_numpy(w))


def setup_case(mod, name, device="cpu"):
    """(model, step(timer) -> loss) for case `name` in library `mod`. step calls
    timer() after the forward + loss and after the backward. `device`: the GPT cases
    only (bench_devices.py runs them on each device)."""
    import numpy as np
    rng = np.random.default_rng(0)
    nn = mod.nn
    clip = nn.utils.clip_grad_norm_
    if name in ("gpt", "gpt_small", "gpt_amp_bf16", "gpt_amp_f16"):
        cfg = gpt_config(name)
        model = build_gpt(mod, cfg)
        fill_weights(mod, model, rng, np)
        model.to(device)
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        opt = mod.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                               {"params": no_decay, "weight_decay": 0.0}],
                              lr=1e-3, betas=(0.9, 0.99))
        shape = (cfg["batch"], cfg["block"])
        x = mod.from_numpy(rng.integers(0, cfg["vocab"], shape).astype(np.int64)).to(device)
        y = mod.from_numpy(rng.integers(0, cfg["vocab"], shape).astype(np.int64)).to(device)

        amp = {"gpt_amp_bf16": mod.bfloat16, "gpt_amp_f16": mod.float16}.get(name)
        dev_type = str(device).split(":")[0]
        # gpt_amp_f16 (bench_devices.py only): float16 with a GradScaler, PyTorch's recipe
        scaler = mod.amp.GradScaler(dev_type, init_scale=2.0 ** 10,
                                    enabled=name == "gpt_amp_f16")

        def step(mark):
            if amp is not None:
                with mod.autocast(dev_type, dtype=amp):
                    loss = model(x, y)
            else:
                loss = model(x, y)
            mark()
            scaler.scale(loss).backward()
            mark()
            scaler.unscale_(opt)
            clip(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            return loss
        return model, step
    if name == "lstm_lm":
        model = build_lstm(mod)
        fill_weights(mod, model, rng, np)
        opt = mod.optim.SGD(model.parameters(), lr=20.0)
        x = mod.from_numpy(rng.integers(0, 10000, (35, 20)).astype(np.int64))
        y = mod.from_numpy(rng.integers(0, 10000, (35, 20)).astype(np.int64))
        state = {"h": (mod.zeros(2, 20, 200), mod.zeros(2, 20, 200))}

        def step(mark):
            h = tuple(t.detach() for t in state["h"])
            loss, state["h"] = model(x, h, y)
            mark()
            loss.backward()
            mark()
            clip(model.parameters(), 0.25)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss
        return model, step
    if name == "resnet18":
        model = build_resnet18(mod)
        fill_weights(mod, model, rng, np)
        opt = mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        x = mod.from_numpy(rng.standard_normal((64, 3, 32, 32)).astype(np.float32))
        y = mod.from_numpy(rng.integers(0, 10, 64).astype(np.int64))
    elif name == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        fill_weights(mod, model, rng, np)
        opt = mod.optim.SGD(model.parameters(), lr=0.01)
        x = mod.from_numpy(rng.standard_normal((128, 784)).astype(np.float32))
        y = mod.from_numpy(rng.standard_normal((128, 10)).astype(np.float32))
    elif name == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
        fill_weights(mod, model, rng, np)
        opt = mod.optim.SGD(model.parameters(), lr=0.01)
        x = mod.from_numpy(rng.standard_normal((32, 1, 28, 28)).astype(np.float32))
        y = mod.from_numpy(rng.integers(0, 10, 32).astype(np.int64))
    elif name in ("convnet", "convnet_cl"):
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                              nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(64, 64, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(64, 10))
        fill_weights(mod, model, rng, np)
        x = mod.from_numpy(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
        y = mod.from_numpy(rng.integers(0, 10, 32).astype(np.int64))
        if name == "convnet_cl":
            model = model.to(memory_format=mod.channels_last)
            x = x.contiguous(memory_format=mod.channels_last)
        opt = mod.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        raise SystemExit(f"bench_models: unknown case {name!r}")
    mse = name == "mlp"
    F = nn.functional

    def step(mark):
        out = model(x)
        loss = ((out - y) ** 2).mean() if mse else F.cross_entropy(out, y)
        mark()
        loss.backward()
        mark()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return model, step


# ---------------------------------------------------------------------- worker

def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def profile_torch(torch, step, steps):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step(lambda: None)
    rows = []
    for e in prof.key_averages():
        rows.append((e.key, e.self_cpu_time_total * 1e-6 / steps, e.count / steps))
    total = sum(r[1] for r in rows)
    return sorted(rows, key=lambda r: -r[1]), total


def profile_ember(step, steps):
    import cProfile
    import pstats
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        step(lambda: None)
    pr.disable()
    st = pstats.Stats(pr)
    rows = []
    for (file, _line, func), (_cc, nc, tt, _ct, _callers) in st.stats.items():
        where = os.path.basename(file).replace(".py", "") if file != "~" else ""
        rows.append((f"{where}.{func}" if where else func, tt / steps, nc / steps))
    total = sum(r[1] for r in rows)
    return sorted(rows, key=lambda r: -r[1]), total


def worker(lib, case, threads, clock_name="wall", beside_torch=False):
    """Serve the driver over stdin/stdout: one JSON line per command. beside_torch:
    ember's worker imports torch first and runs one of its parallel matmuls (a user
    converting weights has both loaded)."""
    clock = harness.CLOCKS[clock_name if threads == 1 else "wall"]
    out = sys.stdout
    sys.stdout = sys.stderr            # nothing else may write on the protocol stream
    if lib == "torch":
        import torch as mod
        mod.set_num_threads(threads)
        version = mod.__version__
    else:
        if beside_torch:
            import torch
            torch.set_num_threads(threads)
            float((torch.randn(512, 512) @ torch.randn(512, 512)).sum())
        import ember as mod
        mod.set_num_threads(threads)
        version = mod.__version__
    model, step = setup_case(mod, case)
    model.train()
    losses = [float(step(lambda: None).item()) for _ in range(2)]   # warm-up, 2 steps

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()
    send({"version": version, "losses": losses, "rss": rss_bytes()})

    def timed_steps(n):
        fwd = bwd = opt = 0.0
        marks = []
        for _ in range(n):
            marks.clear()
            t0 = clock()
            step(lambda: marks.append(clock()))
            t3 = clock()
            fwd += marks[0] - t0
            bwd += marks[1] - marks[0]
            opt += t3 - marks[1]
        return fwd, bwd, opt

    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "run":
            n = int(cmd[1])
            gc.collect()
            fwd, bwd, opt = timed_steps(n)
            send({"fwd": fwd / n, "bwd": bwd / n, "opt": opt / n, "rss": rss_bytes()})
        elif cmd[0] == "profile":
            n = int(cmd[1])
            rows, total = (profile_torch(mod, step, n) if lib == "torch"
                           else profile_ember(step, n))
            send({"rows": rows[:int(cmd[2])], "total": total})
        elif cmd[0] == "memory":
            n, before = int(cmd[1]), rss_bytes()
            for _ in range(n):
                step(lambda: None)
            send({"before": before, "after": rss_bytes()})
        else:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            send({"peak_rss": peak})
            return


# ---------------------------------------------------------------------- driver

def find_torch_python(args):
    # found, not imported: the workers forked from here would inherit torch's RSS as
    # their ru_maxrss high-water mark (Linux keeps it across exec)
    import importlib.util
    if importlib.util.find_spec("torch") is not None:
        return sys.executable
    for cand in (args.torch_python, os.environ.get("EMBER_BENCH_TORCH_PYTHON"),
                 "/tmp/torchvenv/bin/python"):
        if cand and os.path.exists(cand):
            return cand
    return None


class Worker:
    def __init__(self, python, lib, case, threads, clock, beside_torch=False):
        cmd = [python, os.path.abspath(__file__), "--_worker", "--lib", lib, "--case", case,
               "--threads", str(threads), "--clock", clock]
        env = harness.thread_env(threads)
        if beside_torch:
            # ember from this interpreter's site-packages, in torch's interpreter
            import ember
            site = os.path.dirname(os.path.dirname(ember.__file__))
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
            cmd.append("--ember-beside-torch")
        self.lib = lib
        self.p = subprocess.Popen(cmd, env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.hello = self.ask(None)

    def ask(self, line):
        if line is not None:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
        reply = self.p.stdout.readline()
        if not reply:
            raise SystemExit(f"bench_models: the {self.lib} worker died "
                             f"(exit {self.p.wait()})")
        return json.loads(reply)

    def close(self):
        peak = self.ask("quit")["peak_rss"]
        self.p.wait()
        return peak


def run_case(case, threads, pythons, args):
    workers = {lib: Worker(py, lib, case, threads, args.clock,
                           lib == "ember" and args.ember_beside_torch)
               for lib, py in pythons.items()}
    info = {lib: w.hello for lib, w in workers.items()}
    l_em = info["ember"]["losses"]
    if "torch" in workers:
        l_pt = info["torch"]["losses"]
        diff = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(l_em, l_pt))
        info["loss_rel_diff"] = diff
        if diff > 1e-3:
            print(f"# {case}: losses differ: ember {l_em} vs torch {l_pt}", file=sys.stderr)
    n = args.steps or (QUICK_STEPS if args.quick else STEPS)[case]
    rounds = args.rounds or (3 if args.quick else 7)
    samples = {lib: [] for lib in workers}
    order = list(workers)
    rss0 = {lib: w.hello["rss"] for lib, w in workers.items()}
    last = {}
    for r in range(rounds + 1):                      # round 0 is a warm-up
        k = r % len(order)
        for lib in order[k:] + order[:k]:
            rep = workers[lib].ask(f"run {n}")
            last[lib] = rep["rss"]
            if r:
                samples[lib].append(rep)
    prof = {}
    if args.profile:
        for lib, w in workers.items():
            prof[lib] = w.ask(f"profile {2 if args.quick else 3} {args.top}")
    mem = {}
    if args.memory_steps:
        for lib, w in workers.items():
            mem[lib] = w.ask(f"memory {args.memory_steps}")
    peaks = {lib: w.close() for lib, w in workers.items()}
    res = {}
    for lib, ss in samples.items():
        res[lib] = {ph: harness.stats([s[ph] for s in ss])["median"]
                    for ph in ("fwd", "bwd", "opt")}
        res[lib]["step"] = harness.stats([s["fwd"] + s["bwd"] + s["opt"] for s in ss])
        res[lib]["peak_rss"] = peaks[lib]
        res[lib]["rss_growth"] = (mem[lib]["after"] - mem[lib]["before"] if lib in mem
                                  else last[lib] - rss0[lib])
    return res, info, prof


def fmt_mb(b):
    return f"{b / 2**20:.0f}"


def main():
    ap = harness.parser(__doc__, threads="1,2", multi=True)
    ap.add_argument("--filter", default="", help="cases whose name contains one of these "
                    "comma-separated words (an exact name matches only itself)")
    ap.add_argument("--rounds", type=int, default=0, help="rounds (default 7; 3 quick)")
    ap.add_argument("--steps", type=int, default=0, help="steps per sample (default: "
                    "about 0.3 s worth)")
    ap.add_argument("--profile", action="store_true", help="print the top ops per library")
    ap.add_argument("--top", type=int, default=12, help="ops shown by --profile")
    ap.add_argument("--memory-steps", type=int, default=0,
                    help="after timing, run this many more steps and show the RSS growth")
    ap.add_argument("--torch-python", default=None,
                    help="an interpreter with torch (when this one has none)")
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--no-torch", action="store_true", help="ember only")
    ap.add_argument("--ember-beside-torch", action="store_true",
                    help="ember's worker runs in torch's interpreter with torch imported "
                         "and its thread pool used once")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: the 1-thread setting times with the thread's CPU time "
                         "(steadier on a busy machine; 2 threads always use wall time)")
    args = ap.parse_args()
    if args._worker:
        return worker(args.lib, args.case, args.threads[0], args.clock,
                      args.ember_beside_torch)
    words = [w for w in args.filter.split(",") if w]
    cases = [c for c in CASES if not words or c in words or
             any(w in c for w in words if w not in CASES)]
    pythons = {"ember": sys.executable}
    tp = None if args.no_torch else find_torch_python(args)
    if tp:
        pythons["torch"] = tp
    if args.ember_beside_torch:
        if not tp:
            raise SystemExit("bench_models: --ember-beside-torch needs torch")
        pythons["ember"] = tp
    rows, phase_rows, results = [], [], {}
    header = None
    load0 = harness.load()
    for threads in args.threads:
        for case in cases:
            res, info, prof = run_case(case, threads, pythons, args)
            if header is None:
                header = (f"# ember {info['ember']['version']} | torch "
                          f"{info['torch']['version'] if 'torch' in info else 'absent'} | "
                          f"{os.cpu_count()} logical CPUs")
                print(header)
            results[f"{case}@{threads}"] = {"res": res, "info": info, "profile": prof}
            em, pt = res["ember"], res.get("torch")
            r = pt["step"]["median"] / em["step"]["median"] if pt else float("nan")
            target = 1.25 if threads == 1 else 1.0
            rows.append([case, threads, harness.fmt_time(em["step"]["median"]),
                         harness.fmt_time(pt["step"]["median"]) if pt else "-",
                         harness.fmt_ratio(r), f">= {target:.2f}",
                         harness.verdict(r, target),
                         f"{max(em['step']['spread'], pt['step']['spread'] if pt else 0):.0%}",
                         fmt_mb(em["peak_rss"]) + " / " + (fmt_mb(pt["peak_rss"]) if pt else "-"),
                         fmt_mb(em["rss_growth"]) + " / " +
                         (fmt_mb(pt["rss_growth"]) if pt else "-"),
                         f"{info.get('loss_rel_diff', float('nan')):.0e}"])
            for ph, label in (("fwd", "forward+loss"), ("bwd", "backward"),
                              ("opt", "optimizer")):
                rp = pt[ph] / em[ph] if pt else float("nan")
                phase_rows.append([case, threads, label, harness.fmt_time(em[ph]),
                                   harness.fmt_time(pt[ph]) if pt else "-",
                                   harness.fmt_ratio(rp)])
            for lib, p in prof.items():
                print(f"\n## top ops, {lib}, {case}, {threads} thread(s): per step, "
                      f"{harness.fmt_time(p['total'])} profiled in all")
                print(harness.table(["op", "self time", "calls"],
                                    [[n, harness.fmt_time(t), f"{c:.0f}"]
                                     for n, t, c in p["rows"]]))
            sys.stdout.flush()
    print()
    print(harness.table(["case", "thr", "ember", "torch", "pt/em", "target", "result",
                         "spread", "peak RSS MB em/pt", "RSS growth MB", "loss diff"],
                        rows, left={"case", "result"}))
    print()
    print(harness.table(["case", "thr", "phase", "ember", "torch", "pt/em"], phase_rows,
                        left={"case", "phase"}))
    print(f"\n(load {load0} -> {harness.load()}; clock {args.clock}; per step, medians over "
          "rounds; peak RSS: the worker's ru_maxrss)")
    harness.save(args, results=results)


if __name__ == "__main__":
    main()
