"""kiln from Python against PyTorch eager, in one run:

1. the per-call overhead of a small op (c = a + b on 1,000 float32 values, its result read), in
   microseconds per call, for kiln and PyTorch;
2. the Fashion-MNIST CNN's training (the main job: batch 64, Adam) in images per second: kiln
   from Python, kiln's C++ example (examples/fashion_mnist) and PyTorch eager, on the same
   images with the same number of threads.

    PYTHONPATH=build/python python3 bench/python_bench.py [--batches 150] [--threads 2]
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

import kiln
import kiln.nn as knn

try:
    import torch
except ImportError:  # the PyTorch columns say n/a
    torch = None


def per_call_us(fn, n=20000):
    for _ in range(200):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def small_op():
    a_np = np.ones(1000, np.float32)
    ka, kb = kiln.tensor(a_np).eval(), kiln.tensor(a_np).eval()
    rows = [("kiln: (a + b).eval()", per_call_us(lambda: (ka + kb).eval())),
            ("kiln: a + b, graph only", per_call_us(lambda: ka + kb))]
    if torch is not None:
        ta, tb = torch.from_numpy(a_np.copy()), torch.from_numpy(a_np.copy())
        rows.append(("torch: a + b", per_call_us(lambda: ta + tb)))
    return rows


def kiln_cnn(images, labels, batches, batch):
    kiln.manual_seed(1)
    model = knn.Sequential(
        knn.Conv2d(1, 32, 5, 1, padding=2), knn.ReLU(), knn.MaxPool2d(2),
        knn.Conv2d(32, 64, 5, 1, padding=2), knn.ReLU(), knn.MaxPool2d(2),
        knn.Flatten(), knn.Linear(64 * 7 * 7, 1024), knn.ReLU(), knn.Dropout(0.4),
        knn.Linear(1024, 10))
    opt = knn.Adam(model.parameters(), lr=1e-3)
    loader = kiln.data.DataLoader([images, labels], batch_size=batch, shuffle=True, seed=1)
    it = iter(loader)
    for step in range(batches + 3):
        if step == 3:
            start = time.perf_counter()
        x, y = next(it)
        with kiln.gradient_context():
            loss = knn.cross_entropy(model(x), y)
        opt.step(loss)
        loss.item()
    return batches * batch / (time.perf_counter() - start)


def torch_cnn(images, labels, batches, batch):
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, 1, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, 1, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 1024), torch.nn.ReLU(),
        torch.nn.Dropout(0.4), torch.nn.Linear(1024, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_all, y_all = torch.from_numpy(images), torch.from_numpy(labels)
    order = torch.randperm(x_all.shape[0])
    for step in range(batches + 3):
        if step == 3:
            start = time.perf_counter()
        idx = order[step * batch:(step + 1) * batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
        loss.backward()
        opt.step()
        loss.item()
    return batches * batch / (time.perf_counter() - start)


def cpp_example(build, batches, batch, threads):
    exe = os.path.join(build, "examples", "fashion_mnist")
    if not os.path.exists(exe):
        return None
    limit = batches * batch
    out = subprocess.run([exe, "--limit", str(limit), "--test-limit", "500", "--threads",
                          str(threads), "--batch-size", str(batch), "--csv", "/dev/null",
                          "--plot", "/dev/null"], capture_output=True, text=True).stdout
    m = re.search(r"training, ([0-9.]+) img/s", out)
    return float(m.group(1)) if m else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", type=int, default=150)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--build", default="build")
    args = p.parse_args()
    kiln.set_num_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    print(f"kiln {kiln.__version__}, torch {torch.__version__ if torch else 'n/a'}, "
          f"Python {sys.version.split()[0]}, {args.threads} threads")
    print("\nper-call overhead of c = a + b (1,000 float32), microseconds per call:")
    for name, us in small_op():
        print(f"  {name:28s} {us:8.2f}")

    images, labels = kiln.data.load_fashion_mnist("train")
    n = (args.batches + 3) * 64
    images_np = np.asarray(images[:n]).copy()
    labels_np = np.asarray(labels[:n]).copy()
    print(f"\nFashion-MNIST CNN training, batch 64, {args.batches} timed batches, images/s:")
    py = kiln_cnn(images_np, labels_np, args.batches, 64)
    cpp = cpp_example(args.build, args.batches, 64, args.threads)
    tch = torch_cnn(images_np, labels_np, args.batches, 64) if torch is not None else None
    print(f"  kiln from Python          {py:8.0f}")
    print(f"  kiln's C++ example        {cpp:8.0f}" if cpp else "  kiln's C++ example           n/a")
    print(f"  PyTorch eager (Python)    {tch:8.0f}" if tch else "  PyTorch eager (Python)       n/a")
    if cpp:
        print(f"  Python / C++: {py / cpp:.3f} (the goal: within 5%)")
    if tch:
        print(f"  kiln from Python / PyTorch eager: {py / tch:.2f}x the images per second")


if __name__ == "__main__":
    main()
