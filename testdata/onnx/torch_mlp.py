"""Writes the ONNX files lib/onnx's import test reads, with torch.onnx.export
(Debian's python3-torch), and what torch computes on them.

    python3 torch_mlp.py OUTDIR

For each case NAME: OUTDIR/NAME.onnx, and in OUTDIR/cases.json the input rows x and
torch's outputs y (the network's last tensor), or the operator the import must refuse.
"""
import json
import os
import sys

import torch
from torch import nn


class MatMulAdd(nn.Module):
    """x @ W + b written out, which torch.onnx exports as MatMul and Add."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n_in, n_out) / n_in ** 0.5)
        self.b = nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        return x @ self.w + self.b


def cases():
    # name, network, features, opset, export options, operator the import refuses
    yield "relu_softmax", nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 12), nn.ReLU(),
                                        nn.Linear(12, 5), nn.Softmax(dim=1)), 8, 13, {}, None
    yield "tanh_sigmoid", nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 1), nn.Sigmoid()), 5, 17, {}, None
    yield "regression_opset11", nn.Sequential(nn.Flatten(), nn.Linear(6, 9), nn.Sigmoid(), nn.Linear(9, 3)), 6, 11, {}, None
    yield "matmul_add", nn.Sequential(MatMulAdd(4, 10), nn.ReLU(), MatMulAdd(10, 3), nn.Softmax(dim=-1)), 4, 13, {}, None
    yield "no_bias", nn.Sequential(nn.Linear(6, 8, bias=False), nn.Tanh(), nn.Linear(8, 2)), 6, 13, {}, None
    yield "initializers_as_inputs", nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), 3, 13, \
        {"keep_initializers_as_inputs": True}, None
    yield "digits_64_32_10", nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10), nn.Softmax(dim=1)), 64, 13, {}, None
    yield "leaky_relu", nn.Sequential(nn.Linear(4, 4), nn.LeakyReLU(), nn.Linear(4, 2)), 4, 13, {}, "LeakyRelu"
    yield "log_softmax", nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1)), 4, 13, {}, "LogSoftmax"


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    result = {}
    for name, net, features, opset, opts, refused in cases():
        net.eval()
        x = torch.randn(37, features)
        path = os.path.join(out, name + ".onnx")
        torch.onnx.export(net, x[:2], path, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          opset_version=opset, **opts)
        with torch.no_grad():
            y = net(x)
        result[name] = {"x": x.tolist(), "y": y.tolist(), "refused": refused}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
