"""A word-level LSTM language model, written the way PyTorch's word_language_model example
is (only `import torch` became `import ember as torch`): embedding -> LSTM -> tied decoder,
truncated backprop through time, gradient clipping, and the whole model saved with
torch.save and loaded back with torch.load(weights_only=False).

    python examples/word_language_model.py [--data FILE] [--epochs N] [--save PATH]

Without --data it trains on the Zen of Python (the `this` module's text), so it runs
anywhere with nothing downloaded.
"""
import argparse
import codecs
import contextlib
import io
import math
import time

import ember as torch
import ember.nn as nn


class Corpus:
    def __init__(self, text):
        words = text.replace("\n", " <eos> ").split()
        self.idx2word = sorted(set(words))
        self.word2idx = {w: i for i, w in enumerate(self.idx2word)}
        ids = torch.tensor([self.word2idx[w] for w in words], dtype=torch.int64)
        split = int(len(ids) * 0.9)
        self.train, self.valid = ids[:split], ids[split:]


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            assert nhid == ninp, "tied weights need nhid == emsize"
            self.decoder.weight = self.encoder.weight
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


def evaluate(model, source, bptt, criterion, bsz):
    model.eval()
    total, hidden = 0.0, model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, bptt):
            data, targets = get_batch(source, i, bptt)
            output, hidden = model(data, hidden)
            total += len(data) * criterion(output, targets).item()
    return total / (len(source) - 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="a text file (default: the Zen of Python)")
    ap.add_argument("--emsize", type=int, default=32)
    ap.add_argument("--nlayers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=20.0)
    ap.add_argument("--clip", type=float, default=0.25)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch_size", type=int, default=4)
    ap.add_argument("--bptt", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1111)
    ap.add_argument("--save", default="lstm_lm.pt")
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    if args.data:
        with open(args.data) as f:
            text = f.read()
    else:
        with contextlib.redirect_stdout(io.StringIO()):   # `import this` prints the Zen
            import this
        text = codecs.decode(this.s, "rot13")
    corpus = Corpus(text)
    train_data = batchify(corpus.train, args.batch_size)
    val_data = batchify(corpus.valid, 1)
    ntokens = len(corpus.idx2word)
    model = RNNModel(ntokens, args.emsize, args.emsize, args.nlayers)
    criterion = nn.CrossEntropyLoss()
    lr, best_val = args.lr, None
    for epoch in range(1, args.epochs + 1):
        start = time.time()
        model.train()
        hidden = model.init_hidden(args.batch_size)
        total = 0.0
        for i in range(0, train_data.size(0) - 1, args.bptt):
            data, targets = get_batch(train_data, i, args.bptt)
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total += loss.item()
        val_loss = evaluate(model, val_data, args.bptt, criterion, 1)
        steps = math.ceil((train_data.size(0) - 1) / args.bptt)
        print(f"| epoch {epoch:3d} | {time.time() - start:5.2f}s | train loss "
              f"{total / steps:5.2f} | valid loss {val_loss:5.2f} | valid ppl "
              f"{math.exp(min(val_loss, 50)):8.2f}")
        if best_val is None or val_loss < best_val:
            with open(args.save, "wb") as f:
                torch.save(model, f)
            best_val = val_loss
        else:
            lr /= 4.0
    with open(args.save, "rb") as f:
        model = torch.load(f, weights_only=False)
    reloaded = evaluate(model, val_data, args.bptt, criterion, 1)
    print(f"| reloaded {args.save} | valid loss {reloaded:5.2f} (best {best_val:5.2f})")
    return best_val, reloaded


if __name__ == "__main__":
    main()
