"""Prints tests/test_nn_pytorch_layers_values.inc, PyTorch's outputs that
tests/test_nn_pytorch_layers.cpp compares kiln's layers with. Every parameter, by sorted name q,
holds 0.5 sin(0.37 j + 1.3 q) (j: its flat index); inputs hold cos(0.5 j + phase).

    python3 tests/data/make_torch_stack_values.py > tests/test_nn_pytorch_layers_values.inc
"""
import math

import torch

torch.set_grad_enabled(False)
print("// PyTorch %s's values for tests/test_nn_pytorch_layers.cpp "
      "(tests/data/make_torch_stack_values.py)." % torch.__version__.split("+")[0])
def fill(mod):
    names = sorted(n for n, _ in mod.named_parameters())
    params = dict(mod.named_parameters())
    for q, n in enumerate(names):
        p = params[n]
        v = torch.tensor([0.5*math.sin(0.37*j + 1.3*q) for j in range(p.numel())], dtype=torch.float32)
        p.copy_(v.reshape(p.shape))
def inp(*shape, phase=0.0):
    n = 1
    for s in shape: n *= s
    return torch.tensor([math.cos(0.5*j + phase) for j in range(n)], dtype=torch.float32).reshape(shape)
def arr(name, t):
    vals = ", ".join("%.8gf" % v for v in t.flatten().tolist())
    print("const std::vector<float> %s = {%s};" % (name, vals))

lstm = torch.nn.LSTM(3, 2, num_layers=2, bidirectional=True); fill(lstm)
x = inp(4, 2, 3)
y, (h, c) = lstm(x)
arr("kLstmOutput", y); arr("kLstmH", h); arr("kLstmC", c)
gru = torch.nn.GRU(3, 2, num_layers=2, bidirectional=True, batch_first=True); fill(gru)
xb = inp(2, 4, 3)
y, h = gru(xb)
arr("kGruOutput", y); arr("kGruH", h)

enc_layer = torch.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0)
enc = torch.nn.TransformerEncoder(enc_layer, 2, norm=torch.nn.LayerNorm(4), enable_nested_tensor=False)
fill(enc); enc.eval()
src = inp(3, 2, 4)
arr("kEncoderOutput", enc(src))
mask = torch.nn.Transformer.generate_square_subsequent_mask(3)
arr("kEncoderCausalOutput", enc(src, mask=mask, is_causal=True))

for nf in (False, True):
    dec = torch.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, norm_first=nf, activation="gelu")
    fill(dec); dec.eval()
    tgt = inp(3, 2, 4); mem = inp(5, 2, 4, phase=0.3)
    kpm = torch.tensor([[False]*5, [False]*3 + [True]*2])
    out = dec(tgt, mem, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3), tgt_is_causal=True, memory_key_padding_mask=kpm)
    arr("kDecoderOutput" + ("NormFirst" if nf else ""), out)

dec_stack = torch.nn.TransformerDecoder(
    torch.nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0), 2,
    norm=torch.nn.LayerNorm(4))
fill(dec_stack)
dec_stack.eval()
arr("kDecoderStackOutput", dec_stack(inp(3, 2, 4), inp(5, 2, 4, phase=0.3)))

transformer = torch.nn.Transformer(4, 2, num_encoder_layers=2, num_decoder_layers=1,
                                   dim_feedforward=8, dropout=0.0)
fill(transformer)
transformer.eval()
arr("kTransformerOutput", transformer(inp(5, 2, 4, phase=0.3), inp(3, 2, 4),
                                      tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(3),
                                      tgt_is_causal=True))
