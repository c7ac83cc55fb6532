"""A small character-level GPT trained on a text file, written the way PyTorch users write
one (nanoGPT-style; only `import torch` became `import ember as torch`): causal
self-attention blocks, AdamW with weight decay on matrices only, linear warm-up then a
cosine schedule, gradient clipping, and torch.save-style checkpoints
({"model", "optimizer", "step", ...}) that a second run resumes from.

    python examples/tiny_gpt.py [--data FILE] [--steps N] [--out ckpt.pt] [--resume]

Without --data it trains on the Zen of Python (the `this` module's text).
"""
import argparse
import codecs
import contextlib
import io
import math
import os

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.dropout = n_head, dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer=2, n_head=2, n_embd=32, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(n_embd, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight          # weight tying
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            torch.nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else \
            F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, lr, betas):
        decay = [p for p in self.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.parameters() if p.dim() < 2]
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}],
                                 lr=lr, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.block_size:])
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx


def get_lr(step, warmup, total, max_lr, min_lr):
    if step < warmup:
        return max_lr * (step + 1) / warmup
    ratio = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="a text file (default: the Zen of Python)")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch_size", type=int, default=16)
    ap.add_argument("--block_size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--out", default="tiny_gpt.pt")
    ap.add_argument("--resume", action="store_true", help="continue from --out")
    ap.add_argument("--seed", type=int, default=1337)
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    if args.data:
        with open(args.data) as f:
            text = f.read()
    else:
        with contextlib.redirect_stdout(io.StringIO()):   # `import this` prints the Zen
            import this
        text = codecs.decode(this.s, "rot13")
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

    def get_batch():
        ix = torch.randint(len(data) - args.block_size, (args.batch_size,))
        x = torch.stack([data[i:i + args.block_size] for i in ix.tolist()])
        y = torch.stack([data[i + 1:i + 1 + args.block_size] for i in ix.tolist()])
        return x, y

    model = GPT(len(chars), args.block_size)
    optimizer = model.configure_optimizers(0.1, args.lr, (0.9, 0.95))
    start = 0
    if args.resume and os.path.exists(args.out):
        checkpoint = torch.load(args.out, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start = checkpoint["step"]
        print(f"resumed from {args.out} at step {start} (loss {checkpoint['loss']:.4f})")
    losses = []
    for step in range(start, start + args.steps):
        for group in optimizer.param_groups:
            group["lr"] = get_lr(step, 10, start + args.steps, args.lr, args.lr / 10)
        x, y = get_batch()
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == start + args.steps - 1:
            lr = optimizer.param_groups[0]["lr"]
            print(f"step {step:4d} | loss {losses[-1]:.4f} | lr {lr:.2e}")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "step": start + args.steps, "loss": losses[-1], "vocab": chars}, args.out)
    model.eval()
    sample = model.generate(torch.zeros((1, 1), dtype=torch.long), 60)[0].tolist()
    print("sample:", repr("".join(chars[i] for i in sample)))
    return losses


if __name__ == "__main__":
    main()
