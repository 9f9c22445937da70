"""Writes tests/data/torch_layers.safetensors, which tests/test_nn_torch_values.cpp loads: for each
case, PyTorch's parameters (under "<case>.param.<name>", PyTorch's state_dict names), the inputs
("<case>.in.<name>"), the outputs ("<case>.out.<name>") and the gradients of a weighted sum of
the outputs with respect to every input and parameter ("<case>.grad.<name>"; the weights are
"<case>.in.r_<output>"). Dropout is 0, so training mode computes what evaluation mode does. Run
with Debian's python3 (python3-torch):

    /usr/bin/python3 tests/data/make_torch_layer_fixtures.py tests/data
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_torch_fixture import save_file  # noqa: E402

OUT = {}


def record(case, module, inputs, outputs):
    """Stores the case and the gradients of sum(output * r) over the outputs."""
    params = dict(module.named_parameters()) if module is not None else {}
    for name, p in params.items():
        OUT[f"{case}.param.{name}"] = p
    for name, t in inputs.items():
        OUT[f"{case}.in.{name}"] = t.to(torch.int32) if t.dtype == torch.bool else t
    loss = 0
    for name, t in outputs.items():
        r = torch.rand(t.shape) * 2 - 1
        OUT[f"{case}.in.r_{name}"] = r
        OUT[f"{case}.out.{name}"] = t
        loss = loss + (t * r).sum()
    wrt = {n: t for n, t in inputs.items() if t.dtype == torch.float32 and t.requires_grad}
    wrt.update(params)
    grads = torch.autograd.grad(loss, list(wrt.values()))
    for name, g in zip(wrt.keys(), grads):
        OUT[f"{case}.grad.{name}"] = g


def leaf(*shape):
    return (torch.rand(*shape) * 2 - 1).requires_grad_()


def main(out_dir):
    torch.manual_seed(11)

    # scaled_dot_product_attention (PyTorch 2's definition; torch 1.13 has no functional form):
    # softmax(q k^T / sqrt(E) + mask) v, and the causal form from the top-left corner.
    q, k, v = leaf(2, 3, 4, 8), leaf(2, 3, 5, 8), leaf(2, 3, 5, 6)
    mask = torch.rand(4, 5) * 2 - 1
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    out = torch.softmax(scores + mask, -1) @ v
    causal = torch.ones(4, 5).tril().bool()
    out_causal = torch.softmax(scores.masked_fill(~causal, float("-inf")), -1) @ v
    record("sdpa", None, {"q": q, "k": k, "v": v, "mask": mask},
           {"masked": out, "causal": out_causal})

    # Self-attention, batch first, with a causal boolean mask and one padded key.
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = leaf(2, 5, 8)
    attn_mask = torch.ones(5, 5).triu(1).bool()  # True: left out
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 4] = True
    out, weights = mha(x, x, x, attn_mask=attn_mask, key_padding_mask=padding)
    record("mha_self", mha, {"x": x, "attn_mask": attn_mask, "key_padding_mask": padding},
           {"output": out, "weights": weights})

    # Cross-attention, sequence first, with a float mask.
    mha = torch.nn.MultiheadAttention(8, 4)
    query, key, value = leaf(4, 3, 8), leaf(6, 3, 8), leaf(6, 3, 8)
    attn_mask = torch.rand(4, 6) - 0.5
    out, weights = mha(query, key, value, attn_mask=attn_mask)
    record("mha_cross", mha, {"query": query, "key": key, "value": value, "attn_mask": attn_mask},
           {"output": out, "weights": weights})

    # Encoder layers: post-norm ReLU batch first, and pre-norm GELU sequence first.
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             batch_first=True)
    x = leaf(2, 5, 8)
    record("encoder_post", layer, {"x": x}, {"output": layer(x)})
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                             activation="gelu", norm_first=True)
    x = leaf(5, 2, 8)
    record("encoder_pre_gelu", layer, {"x": x}, {"output": layer(x)})

    # Recurrent layers with given initial states.
    lstm = torch.nn.LSTM(4, 6, num_layers=2, batch_first=True)
    x, h0, c0 = leaf(3, 5, 4), leaf(2, 3, 6), leaf(2, 3, 6)
    out, (hn, cn) = lstm(x, (h0, c0))
    record("lstm", lstm, {"x": x, "h0": h0, "c0": c0}, {"output": out, "h": hn, "c": cn})
    gru = torch.nn.GRU(4, 6, num_layers=2)
    x, h0 = leaf(5, 3, 4), leaf(2, 3, 6)
    out, hn = gru(x, h0)
    record("gru", gru, {"x": x, "h0": h0}, {"output": out, "h": hn})

    save_file(OUT, os.path.join(out_dir, "torch_layers.safetensors"),
              {"torch": torch.__version__})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
