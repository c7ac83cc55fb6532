"""Variable-length sequences for the recurrent layers (torch.nn.utils.rnn):
PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence, pack_sequence,
unpad_sequence, unpack_sequence. RNN, LSTM and GRU accept a PackedSequence and return
one; each sequence's output and final state equal those of running it alone.

A PackedSequence holds the sequences sorted by decreasing length and interleaved by
time step: `data` is (sum of lengths, *) with step t's batch_sizes[t] entries (one per
sequence still running) one after the other; sorted_indices (None when the input was
sorted) maps the sorted order to the original one, unsorted_indices back.
"""
from __future__ import annotations

from collections import namedtuple

import ember as em

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]

_PackedSequenceBase = namedtuple("PackedSequence",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a permutation (a 1-D int64 tensor), None for None."""
    if permutation is None:
        return None
    return em.argsort(permutation)


class PackedSequence(_PackedSequenceBase):
    """The packed form of a batch of variable-length sequences (see the module's
    docstring); made by pack_padded_sequence / pack_sequence, not by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise ValueError("PackedSequence: batch_sizes is required (build packed sequences "
                             "with pack_padded_sequence or pack_sequence)")
        if not isinstance(data, em.Tensor) or not isinstance(batch_sizes, em.Tensor):
            raise TypeError(f"PackedSequence: data and batch_sizes must be tensors, got "
                            f"{type(data).__name__} and {type(batch_sizes).__name__}")
        if batch_sizes.device.type != "cpu" or batch_sizes.ndim != 1:
            raise ValueError("PackedSequence: batch_sizes should always be a 1-D CPU int64 "
                             "tensor")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequences with data moved/cast as Tensor.to does (the indices follow
        data's device; batch_sizes stays on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices = None if self.sorted_indices is None else \
            self.sorted_indices.to(data.device)
        unsorted_indices = None if self.unsorted_indices is None else \
            self.unsorted_indices.to(data.device)
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    def double(self):
        return self.to(dtype=em.float64)

    def float(self):
        return self.to(dtype=em.float32)

    def half(self):
        return self.to(dtype=em.float16)

    def long(self):
        return self.to(dtype=em.int64)

    def int(self):
        return self.to(dtype=em.int32)

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return self.data.is_pinned()


def _lengths_list(lengths, op):
    if isinstance(lengths, em.Tensor):
        if lengths.ndim != 1:
            raise ValueError(f"{op}: lengths must be a 1-D tensor, got shape "
                             f"{tuple(lengths.shape)}")
        return [int(v) for v in lengths.cpu().tolist()]
    try:
        return [int(v) for v in lengths]
    except TypeError:
        raise TypeError(f"{op}: lengths must be a list or a 1-D tensor of ints, got "
                        f"{type(lengths).__name__}") from None


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T x B x * , or B x T x * with batch_first) of sequences of
    the given lengths. enforce_sorted=True needs the lengths in decreasing order;
    False sorts them (the order is kept in sorted_indices and restored by
    pad_packed_sequence and by the RNNs' outputs)."""
    op = "pack_padded_sequence"
    if not isinstance(input, em.Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    lens = _lengths_list(lengths, op)
    if input.ndim < 2:
        raise ValueError(f"{op}: input must have at least 2 dimensions (time and batch), got "
                         f"shape {tuple(input.shape)}")
    batch_dim = 0 if batch_first else 1
    if len(lens) != input.shape[batch_dim]:
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{len(lens)} (batch_size={input.shape[batch_dim]})")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])   # stable
        sorted_indices = em.tensor(order, dtype=em.int64, device=input.device)
        lens = [lens[i] for i in order]
        input = input.index_select(batch_dim, sorted_indices)
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if lens and lens[0] > input.shape[1 - batch_dim]:
        raise RuntimeError(f"{op}: a length ({lens[0]}) exceeds the padded sequence length "
                           f"({input.shape[1 - batch_dim]})")
    if batch_first:
        input = input.transpose(0, 1)
    max_len = lens[0] if lens else 0
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(max_len)]
    data = em.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)], 0) if batch_sizes \
        else input.reshape(0, *input.shape[2:])
    return PackedSequence(data, em.tensor(batch_sizes, dtype=em.int64), sorted_indices, None)


def _check_packed(sequence, op):
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{op}: expected a PackedSequence, got {type(sequence).__name__}")


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded batch, lengths), in the original
    order; total_length pads to that many steps (at least the longest sequence)."""
    op = "pad_packed_sequence"
    _check_packed(sequence, op)
    batch_sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
    else:
        total_length = max_len
    data = sequence.data
    batch = batch_sizes[0] if batch_sizes else 0
    tail = tuple(data.shape[1:])
    steps, offset = [], 0
    for bs in batch_sizes:
        step = data[offset:offset + bs]
        offset += bs
        if bs < batch:
            step = em.cat([step, em.full((batch - bs,) + tail, padding_value, dtype=data.dtype,
                                         device=data.device)], 0)
        steps.append(step)
    for _ in range(total_length - max_len):
        steps.append(em.full((batch,) + tail, padding_value, dtype=data.dtype,
                             device=data.device))
    padded = em.stack(steps, 0) if steps else em.full((total_length, batch) + tail,
                                                      padding_value, dtype=data.dtype,
                                                      device=data.device)
    lengths = [sum(1 for bs in batch_sizes if bs > i) for i in range(batch)]
    lengths = em.tensor(lengths, dtype=em.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into one (max L, B, *) (or (B, max L, *) with
    batch_first), padding each with padding_value after (padding_side='right') or
    before ('left') its values."""
    op = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, em.Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise ValueError(f"{op}: received an empty list of sequences")
    for i, s in enumerate(sequences):
        if not isinstance(s, em.Tensor):
            raise TypeError(f"{op}: sequences[{i}] must be a Tensor, got {type(s).__name__}")
        if s.ndim < 1 or s.shape[1:] != sequences[0].shape[1:]:
            raise ValueError(f"{op}: every sequence must have the trailing shape "
                             f"{tuple(sequences[0].shape[1:])}; sequences[{i}] has shape "
                             f"{tuple(s.shape)}")
    max_len = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        pad = max_len - s.shape[0]
        if pad:
            fill = em.full((pad,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                           device=s.device)
            s = em.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        out.append(s)
    return em.stack(out, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences (each (L_i, *)) of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    lens = _lengths_list(lengths, "unpad_sequence")
    if len(lens) != padded_sequences.shape[0]:
        raise ValueError(f"unpad_sequence: {len(lens)} lengths for a batch of "
                         f"{padded_sequences.shape[0]}")
    return [seq[:n] for seq, n in zip(padded_sequences, lens)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors of shapes (L_i, *) (decreasing lengths unless
    enforce_sorted=False)."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
