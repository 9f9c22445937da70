"""One training step of the same small network in PyTorch and in kiln, side by side: the same
initial weights (copied from PyTorch through DLPack), the same batch, and the losses and updated
weights compared. Needs torch (pip install torch).

    PYTHONPATH=build/python python3 examples/python/torch_side_by_side.py
"""

import numpy as np
import torch

import kiln
import kiln.nn as knn

torch.manual_seed(0)
x_np = np.random.default_rng(0).standard_normal((32, 20)).astype(np.float32)
y_np = np.arange(32) % 5

# ---- PyTorch ----                              # ---- kiln ----
tmodel = torch.nn.Sequential(                     # kmodel = knn.Sequential(
    torch.nn.Linear(20, 64), torch.nn.ReLU(),     #     knn.Linear(20, 64), knn.ReLU(),
    torch.nn.Linear(64, 5))                       #     knn.Linear(64, 5))
kmodel = knn.Sequential(knn.Linear(20, 64), knn.ReLU(), knn.Linear(64, 5))
# The same starting point: PyTorch's weights, by name (kiln's Linear weight is [out, in] too).
kmodel.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})

topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9)
kopt = knn.SGD(kmodel.parameters(), lr=0.1, momentum=0.9)

x_t, y_t = torch.from_numpy(x_np), torch.from_numpy(y_np)
x_k, y_k = kiln.tensor(x_np), kiln.tensor(y_np)

for step in range(3):
    topt.zero_grad()                              # (kiln's step(loss) takes no zero_grad)
    tloss = torch.nn.functional.cross_entropy(tmodel(x_t), y_t)
    tloss.backward()                              # with kiln.gradient_context():
    topt.step()                                   #     kloss = knn.cross_entropy(kmodel(x_k), y_k)
    with kiln.gradient_context():                 # kopt.step(kloss)
        kloss = knn.cross_entropy(kmodel(x_k), y_k)
    kopt.step(kloss)
    print(f"step {step}: loss torch {tloss.item():.6f}  kiln {kloss.item():.6f}")

for name, p in kmodel.named_parameters():
    theirs = tmodel.state_dict()[name].numpy()
    diff = np.abs(np.asarray(p.value) - theirs).max()
    print(f"{name:10s} largest difference after 3 steps: {diff:.2e}")
    assert diff < 1e-5
# kiln's values go to PyTorch without a copy as well:
shared = torch.from_dlpack(kmodel[0].weight.value)
print("kiln -> torch through DLPack, same memory:",
      shared.data_ptr() == np.asarray(kmodel[0].weight.value).__array_interface__["data"][0])
