"""kiln from Python against PyTorch eager, in one run:

1. the per-call overhead of a small op (c = a + b on 1,000 float32 values, its result read), in
   microseconds per call, for kiln and PyTorch;
2. the Fashion-MNIST CNN's training (the main job: batch 64, Adam) in images per second over
   one epoch of the first N images, timed as examples/fashion_mnist times its epochs (from the
   first batch to the last loss read, the first batches' schedules included): kiln from Python,
   kiln's C++ example and PyTorch eager, on the same images with the same number of threads.

    PYTHONPATH=build/python python3 bench/python_bench.py [--images 12800] [--threads 2]
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

try:  # each side runs in a process of its own (below); this one only asks whether torch is here
    import importlib.util
    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except ImportError:
    HAVE_TORCH = False
torch = None


def per_call_us(fn, n=20000):
    for _ in range(200):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def small_op(side):
    a_np = np.ones(1000, np.float32)
    if side == "kiln":
        ka, kb = kiln.tensor(a_np).eval(), kiln.tensor(a_np).eval()
        return [("kiln: (a + b).eval()", per_call_us(lambda: (ka + kb).eval())),
                ("kiln: a + b, graph only", per_call_us(lambda: ka + kb))]
    ta, tb = torch.from_numpy(a_np.copy()), torch.from_numpy(a_np.copy())
    return [("torch: a + b", per_call_us(lambda: ta + tb))]


def kiln_cnn(images, labels, batch):
    kiln.manual_seed(1)
    model = knn.Sequential(
        knn.Conv2d(1, 32, 5, 1, padding=2), knn.ReLU(), knn.MaxPool2d(2),
        knn.Conv2d(32, 64, 5, 1, padding=2), knn.ReLU(), knn.MaxPool2d(2),
        knn.Flatten(), knn.Linear(64 * 7 * 7, 1024), knn.ReLU(), knn.Dropout(0.4),
        knn.Linear(1024, 10))
    opt = knn.Adam(model.parameters(), lr=1e-3)
    loader = kiln.data.DataLoader([images, labels], batch_size=batch, shuffle=True, seed=1)
    start = time.perf_counter()
    seen = 0
    for x, y in loader:
        with kiln.gradient_context():
            loss = knn.cross_entropy(model(x), y)
        opt.step(loss)
        loss.item()
        seen += y.shape[0]
    return seen / (time.perf_counter() - start)


def torch_cnn(images, labels, batch):
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, 1, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 5, 1, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 1024), torch.nn.ReLU(),
        torch.nn.Dropout(0.4), torch.nn.Linear(1024, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x_all, y_all = torch.from_numpy(images), torch.from_numpy(labels)
    order = torch.randperm(x_all.shape[0])
    start = time.perf_counter()
    for first in range(0, x_all.shape[0], batch):
        idx = order[first:first + batch]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
        loss.backward()
        opt.step()
        loss.item()
    return x_all.shape[0] / (time.perf_counter() - start)


def cpp_example(build, images, batch, threads):
    exe = os.path.join(build, "examples", "fashion_mnist")
    if not os.path.exists(exe):
        return None
    out = subprocess.run([exe, "--limit", str(images), "--test-limit", "500", "--threads",
                          str(threads), "--batch-size", str(batch), "--csv", "/dev/null",
                          "--plot", "/dev/null"], capture_output=True, text=True).stdout
    m = re.search(r"training, ([0-9.]+) img/s", out)
    return float(m.group(1)) if m else None


def one_side(args):
    """This process measures one side only: kiln's and PyTorch's thread pools never share it."""
    global torch
    if args.side == "torch":
        import torch as torch_module
        torch = torch_module
        torch.set_num_threads(args.threads)
    else:
        kiln.set_num_threads(args.threads)
    images, labels = kiln.data.load_fashion_mnist("train")
    images_np = np.asarray(images[:args.images]).copy()
    labels_np = np.asarray(labels[:args.images]).copy()
    for name, us in small_op(args.side):
        print(f"overhead {name}: {us:.3f}")
    rate = (kiln_cnn if args.side == "kiln" else torch_cnn)(images_np, labels_np, 64)
    print(f"cnn {rate:.1f}")


def run_side(side, args):
    out = subprocess.run([sys.executable, __file__, "--side", side, "--images", str(args.images),
                          "--threads", str(args.threads)], capture_output=True, text=True,
                         check=True).stdout
    overheads = re.findall(r"overhead (.*): ([0-9.]+)", out)
    return [(n, float(v)) for n, v in overheads], float(re.search(r"cnn ([0-9.]+)", out).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--images", type=int, default=12800, help="the epoch's images")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build", default="build")
    p.add_argument("--side", choices=["kiln", "torch"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side:
        one_side(args)
        return
    torch_version = "n/a"
    if HAVE_TORCH:
        torch_version = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                       capture_output=True, text=True).stdout.strip()
    print(f"kiln {kiln.__version__}, torch {torch_version}, Python {sys.version.split()[0]}, "
          f"{args.threads} threads, each side in a process of its own")
    # Rounds interleaved, each side's best kept: this machine's neighbours come and go.
    n = args.images
    py_runs, cpp_runs, torch_runs, overheads = [], [], [], {}
    for _ in range(args.rounds):
        o, rate = run_side("kiln", args)
        py_runs.append(rate)
        for name, us in o:
            overheads[name] = min(us, overheads.get(name, us))
        cpp_runs.append(cpp_example(args.build, n, 64, args.threads) or 0)
        if HAVE_TORCH:
            o, rate = run_side("torch", args)
            torch_runs.append(rate)
            for name, us in o:
                overheads[name] = min(us, overheads.get(name, us))
    print("\nper-call overhead of c = a + b (1,000 float32), microseconds per call (best round):")
    for name, us in overheads.items():
        print(f"  {name:28s} {us:8.2f}")
    print(f"\nFashion-MNIST CNN training, batch 64, one epoch of {n} images, images/s:")
    print("  rounds (kiln Python, kiln C++, PyTorch):",
          "; ".join(f"{a:.0f}, {b:.0f}, {c:.0f}" for a, b, c in
                    zip(py_runs, cpp_runs, torch_runs or [0] * len(py_runs))))
    py, cpp = max(py_runs), max(cpp_runs) or None
    tch = max(torch_runs) if torch_runs else None
    print(f"  kiln from Python          {py:8.0f}  (best of {args.rounds})")
    print(f"  kiln's C++ example        {cpp:8.0f}" if cpp else "  kiln's C++ example           n/a")
    print(f"  PyTorch eager (Python)    {tch:8.0f}" if tch else "  PyTorch eager (Python)       n/a")
    if cpp:
        print(f"  Python / C++: {py / cpp:.3f} (the goal: within 5%)")
    if tch:
        print(f"  kiln from Python / PyTorch eager: {py / tch:.2f}x the images per second")


if __name__ == "__main__":
    main()
