"""Writes the safetensors fixtures tests/test_safetensors.cpp loads: a small PyTorch model's
state_dict (torch_model.safetensors) and an input with the model's output in evaluation mode
(torch_model_io.safetensors). The format is written with the standard library, as the
`safetensors` package would write it. Run with Debian's python3 (python3-torch):

    /usr/bin/python3 tests/data/make_torch_fixture.py tests/data
"""
import json
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64"}


def save_file(tensors, path, metadata=None):
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    blobs = []
    for name, t in tensors.items():
        t = t.detach().contiguous()
        data = t.numpy().tobytes()  # little-endian on the machines torch runs on
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def main(out_dir):
    torch.manual_seed(7)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3),
        torch.nn.BatchNorm2d(3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(3 * 4 * 4, 5),
    )
    # Running statistics other than the initial ones, so that loading them is checked.
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 2.0)
        model[1].weight.uniform_(0.5, 1.5)
        model[1].bias.uniform_(-0.2, 0.2)
    model.eval()
    x = torch.rand(2, 1, 6, 6)
    with torch.no_grad():
        y = model(x)
    save_file(model.state_dict(), os.path.join(out_dir, "torch_model.safetensors"),
              {"format": "pt"})
    save_file({"input": x, "output": y}, os.path.join(out_dir, "torch_model_io.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
