"""Writes tests/data/torch_layers.safetensors, which tests/test_nn_torch_values.cpp loads: for each
case, PyTorch's parameters (under "<case>.param.<name>", PyTorch's state_dict names), the inputs
("<case>.in.<name>"), the outputs ("<case>.out.<name>") and the gradients of a weighted sum of
the outputs with respect to every input and parameter ("<case>.grad.<name>"; the weights are
"<case>.in.r_<output>"); each loss's value and gradient ("loss.*"), and three steps of each optimiser
("optim.*"). Dropout is 0, so training mode computes what evaluation mode does. Run
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


def layers(out):
    """Every other layer kiln's nn has, in training mode (BatchNorm also stores its running
    statistics after the batch)."""
    nn = torch.nn
    cases = {
        "linear": (nn.Linear(5, 3), (4, 5)),
        "conv2d": (nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2), (2, 4, 7, 7)),
        "conv2d_dilated": (nn.Conv2d(3, 2, 3, padding=2, dilation=2), (2, 3, 6, 6)),
        "conv1d": (nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
        "conv_transpose2d": (nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1,
                                                groups=2), (2, 4, 4, 4)),
        "batch_norm2d": (nn.BatchNorm2d(3), (4, 3, 5, 5)),
        "batch_norm1d": (nn.BatchNorm1d(6), (8, 6)),
        "layer_norm": (nn.LayerNorm([4, 5]), (3, 4, 5)),
        "group_norm": (nn.GroupNorm(2, 6), (3, 6, 4, 4)),
        "max_pool2d": (nn.MaxPool2d(2), (2, 3, 6, 6)),
        "avg_pool2d": (nn.AvgPool2d(3, stride=2, padding=1), (2, 3, 7, 7)),
        "adaptive_avg_pool2d": (nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
        "upsample_nearest": (nn.Upsample(size=(7, 5), mode="nearest"), (2, 3, 4, 3)),
        "upsample_bilinear": (nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                              (2, 3, 4, 3)),
        "upsample_bilinear_corners": (nn.Upsample(size=(7, 5), mode="bilinear",
                                                  align_corners=True), (2, 3, 4, 3)),
        "gelu": (nn.GELU(), (3, 7)),
        "silu": (nn.SiLU(), (3, 7)),
        "tanh": (nn.Tanh(), (3, 7)),
        "sigmoid": (nn.Sigmoid(), (3, 7)),
        "leaky_relu": (nn.LeakyReLU(0.2), (3, 7)),
        "softmax": (nn.Softmax(dim=1), (3, 7)),
    }
    for name, (module, shape) in cases.items():
        with torch.no_grad():
            for p in module.parameters():  # weights other than the initial ones
                p.uniform_(-1, 1)
        x = leaf(*shape)
        y = module(x)
        outputs = {"output": y}
        if name.startswith("batch_norm"):
            outputs_extra = {"running_mean": module.running_mean, "running_var": module.running_var}
            for k, v in outputs_extra.items():
                out[f"{name}.out.{k}"] = v
        record(name, module, {"x": x}, outputs)
    embedding = nn.Embedding(10, 4)
    indices = torch.tensor([[1, 3, 3], [0, 9, 2]])
    record("embedding", embedding, {"indices": indices}, {"output": embedding(indices)})


def losses():
    """Each loss with its options, and its gradient with respect to the input."""
    F = torch.nn.functional
    x, t = leaf(4, 5), torch.rand(4, 5) * 2 - 1
    p, b = torch.rand(4, 5).mul(0.9).add(0.05).requires_grad_(), torch.rand(4, 5)
    logits, labels = leaf(6, 5), torch.tensor([0, 4, 2, -100, 1, 3])
    weight = torch.rand(5) + 0.5
    log_p = torch.log_softmax(torch.rand(4, 5), 1).requires_grad_()
    target_p = torch.softmax(torch.rand(4, 5), 1)
    cases = {
        "mse": (x, lambda: F.mse_loss(x, t)),
        "mse_sum": (x, lambda: F.mse_loss(x, t, reduction="sum")),
        "l1": (x, lambda: F.l1_loss(x, t)),
        "smooth_l1": (x, lambda: F.smooth_l1_loss(x, t, beta=0.5)),
        "huber": (x, lambda: F.huber_loss(x, t, delta=0.3)),
        "bce": (p, lambda: F.binary_cross_entropy(p, b)),
        "bce_logits": (x, lambda: F.binary_cross_entropy_with_logits(
            x, b, pos_weight=torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0]))),
        "nll": (log_p, lambda: F.nll_loss(log_p, torch.tensor([0, 4, 2, 1]), weight=weight)),
        "cross_entropy": (logits, lambda: F.cross_entropy(logits, labels, weight=weight,
                                                          label_smoothing=0.1)),
        "cross_entropy_none": (logits, lambda: F.cross_entropy(
            logits, labels.clamp(min=0), reduction="none").sum()),
        "kl_div": (log_p, lambda: F.kl_div(log_p, target_p, reduction="batchmean")),
    }
    for name, (wrt, loss) in cases.items():
        value = loss()
        (grad,) = torch.autograd.grad(value, [wrt])
        OUT[f"loss.{name}.value"] = value.detach().reshape(1)
        OUT[f"loss.{name}.grad"] = grad
    OUT["loss.x"], OUT["loss.t"], OUT["loss.p"], OUT["loss.b"] = x, t, p, b
    OUT["loss.logits"], OUT["loss.labels"], OUT["loss.weight"] = logits, labels, weight
    OUT["loss.log_p"], OUT["loss.target_p"] = log_p, target_p


def optimisers():
    """Three steps of each optimiser from the same start on the same gradients (fed through
    loss = sum(p * g))."""
    start = torch.rand(3, 4) * 2 - 1
    grads = [torch.rand(3, 4) * 2 - 1 for _ in range(3)]
    OUT["optim.start"] = start
    for i, g in enumerate(grads):
        OUT[f"optim.grad{i}"] = g
    optim = torch.optim
    cases = {
        "sgd": lambda p: optim.SGD([p], lr=0.1),
        "sgd_momentum": lambda p: optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1,
                                            weight_decay=0.01),
        "sgd_nesterov": lambda p: optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True),
        "adam": lambda p: optim.Adam([p], lr=0.01, weight_decay=0.01),
        "adamw": lambda p: optim.AdamW([p], lr=0.01, weight_decay=0.1),
        "rmsprop": lambda p: optim.RMSprop([p], lr=0.01, momentum=0.5, centered=True,
                                           weight_decay=0.01),
        "adagrad": lambda p: optim.Adagrad([p], lr=0.1, lr_decay=0.01, weight_decay=0.01,
                                           initial_accumulator_value=0.1),
    }
    for name, make in cases.items():
        p = start.clone().requires_grad_()
        opt = make(p)
        for i, g in enumerate(grads):
            opt.zero_grad()
            (p * g).sum().backward()
            opt.step()
            OUT[f"optim.{name}.step{i}"] = p.detach().clone()


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

    layers(OUT)
    losses()
    optimisers()
    save_file(OUT, os.path.join(out_dir, "torch_layers.safetensors"),
              {"torch": torch.__version__})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
