# PyTorch's "export a model to ONNX and run it with ONNX Runtime" tutorial, with the
# imports renamed: export with dynamic batch, check the file, run it, compare.
import os
import tempfile

import numpy as np
import onnx
import onnxruntime

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


class SuperResolutionNet(nn.Module):
    def __init__(self, upscale_factor, inplace=False):
        super().__init__()
        self.relu = nn.ReLU(inplace=inplace)
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 16, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(32, 3)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embed(tokens))
        return F.log_softmax(self.fc(out[:, -1]), dim=-1)


def to_numpy(tensor):
    return tensor.detach().cpu().numpy() if tensor.requires_grad else tensor.cpu().numpy()


folder = tempfile.mkdtemp()
for model, x in [(SuperResolutionNet(upscale_factor=3), torch.randn(1, 1, 16, 16)),
                 (Classifier(), torch.randint(0, 20, (2, 5)))]:
    model.eval()
    torch_out = model(x)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, x, path, export_params=True, opset_version=17,
                      do_constant_folding=True, input_names=["input"],
                      output_names=["output"],
                      dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}},
                      dynamo=False)
    onnx_model = onnx.load(path)
    onnx.checker.check_model(onnx_model)
    ort_session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort_outs = ort_session.run(None, {ort_session.get_inputs()[0].name: to_numpy(x)})
    np.testing.assert_allclose(to_numpy(torch_out), ort_outs[0], rtol=1e-03, atol=1e-05)
    # another batch size through the dynamic axis
    x3 = torch.cat([x, x, x], 0)
    ort_outs = ort_session.run(None, {"input": to_numpy(x3)})
    np.testing.assert_allclose(to_numpy(model(x3)), ort_outs[0], rtol=1e-03, atol=1e-05)
    print(type(model).__name__, "exported, ONNX Runtime agrees")
print("ok")
