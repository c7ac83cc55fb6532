# Legacy typed constructors from older tutorials.
import ember as torch

x = torch.FloatTensor([[1, 2], [3, 4]])
labels = torch.LongTensor([0, 1])
mask = torch.ByteTensor([1, 0]).bool()
buf = torch.Tensor(2, 3).zero_()
assert isinstance(x, torch.FloatTensor) and not isinstance(labels, torch.FloatTensor)
assert isinstance(labels, torch.LongTensor)
assert x.dtype == torch.float32 and labels.dtype == torch.int64
assert torch.Tensor([-4.0]).tolist() == [-4.0]
assert buf.shape == (2, 3)
loss = torch.nn.functional.cross_entropy(x, labels)
print(float(loss), mask.tolist())
print("ok")
