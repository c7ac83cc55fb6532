# The device-picking preamble of PyTorch 2.x scripts.
import ember as torch

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")
model = torch.nn.Linear(4, 2).to(device)
x = torch.randn(3, 4, device=device)
loss = model(x).pow(2).mean()
loss.backward()
if torch.accelerator.is_available():
    torch.accelerator.synchronize()
    idx = torch.accelerator.current_device_index()
    with torch.accelerator.device_index(idx):
        y = torch.ones(2, device=device)
    assert y.device.type == torch.device(device).type
backend = torch.distributed.get_default_backend_for_device(device)
print("backend", backend)
assert model.weight.grad is not None
print("ok")
