"""PyTorch on CUDA, the peer of kiln_bench's and kiln_train_bench's rows on a GPU.

Prints one line per workload, named as kiln_bench names it, with PyTorch eager's median time, and
the device's measured copy bandwidth (the bound of the memory-bound rows). The CNN rows are the
Fashion-MNIST "2 Conv+pooling" training step of kiln_train_bench (Adam lr 1e-3, cross-entropy,
batch 64), in eager mode and replayed as a CUDA graph (what torch.compile's "reduce-overhead" mode
does, without its compile time).
    python3 bench/torch_gpu_peer.py [--quick]
"""
import statistics
import sys
import time

import torch
import torch.nn as nn

dev = "cuda"
quick = "--quick" in sys.argv
torch.backends.cuda.matmul.allow_tf32 = False  # kiln's f32 products are exact f32
torch.backends.cudnn.allow_tf32 = False


def median_ms(f, reps=None, inner=10):
    reps = reps or (5 if quick else 15)
    f()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            f()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) / inner * 1e3)
    return statistics.median(times)


def row(name, ms, bytes_moved=0, flops=0, unit="ms"):
    extra = ""
    if bytes_moved:
        extra = f"  bound {bytes_moved / bandwidth * 1e3:.4f} ms"
    if flops:
        extra = f"  {flops / ms / 1e9:.1f} TFLOP/s"
    print(f"torch  {name:<44} {ms:10.4f} {unit}{extra}", flush=True)


print("torch", torch.__version__, "on", torch.cuda.get_device_name(), flush=True)
big = torch.empty(256 * 2**20, dtype=torch.float32, device=dev)
copy = torch.empty_like(big)
copy_ms = median_ms(lambda: copy.copy_(big), inner=5)
bandwidth = 2 * big.numel() * 4 / (copy_ms / 1e3)  # bytes per second, read + write
print(f"device copy bandwidth (read + write): {bandwidth / 1e12:.2f} TB/s", flush=True)
del big, copy

g = torch.Generator(device=dev).manual_seed(1)
r = lambda *s, dtype=torch.float32: torch.rand(*s, device=dev, generator=g, dtype=dtype)
a, b, c = r(10_000_000), r(10_000_000), r(10_000_000)
row("exp(sin(a)*b+c)/2 10M", median_ms(lambda: torch.exp(torch.sin(a) * b + c) / 2), 4 * 4e7)
x, v = r(1000, 1000), r(1000)
row("row add [1000,1000]+[1000]", median_ms(lambda: x + v), 4 * 2.001e6)
m = r(4096, 4096)
row("sum [4096,4096] axis 0", median_ms(lambda: m.sum(0)), 4 * 4096 * 4097)
row("sum [4096,4096] axis 1", median_ms(lambda: m.sum(1)), 4 * 4096 * 4097)
row("sum [4096,4096] all", median_ms(lambda: m.sum()), 4 * 4096 * 4096)
for n in (256, 512, 1024, 2048, 4096):
    A, B = r(n, n), r(n, n)
    row(f"matmul {n}x{n}", median_ms(lambda: A @ B), flops=2 * n**3)
A, B = r(64, 128, 128), r(64, 128, 128)
row("matmul [64,128,128]@[64,128,128]", median_ms(lambda: A @ B), flops=64 * 2 * 128**3)
img, w = r(8, 64, 56, 56), r(64, 64, 3, 3)
f = torch.nn.functional
row("conv2d [8,64,56,56]*[64,64,3,3] pad 1", median_ms(lambda: f.conv2d(img, w, padding=1)),
    flops=2 * 8 * 64 * 56 * 56 * 64 * 9)
img, w = r(32, 3, 64, 64), r(16, 3, 3, 3)
row("conv2d [32,3,64,64]*[16,3,3,3] pad 1", median_ms(lambda: f.conv2d(img, w, padding=1)),
    flops=2 * 32 * 16 * 64 * 64 * 3 * 9)
logits = r(4096, 1000)
row("softmax [4096,1000]", median_ms(lambda: torch.softmax(logits, 1)), 8 * 4096 * 1000)
row("log_softmax [4096,1000]", median_ms(lambda: torch.log_softmax(logits, 1)), 8 * 4096 * 1000)
img = r(32, 16, 62, 62)
row("max_pool2d 2x2 [32,16,62,62]", median_ms(lambda: f.max_pool2d(img, 2)), 5 * 32 * 16 * 62 * 62)
z = torch.complex(r(4_000_000), r(4_000_000))
row("c64 exp(z)*z+z 4M", median_ms(lambda: torch.exp(z) * z + z), 16 * 4e6)
za, zb = torch.complex(r(512, 512), r(512, 512)), torch.complex(r(512, 512), r(512, 512))
row("c64 matmul 512x512", median_ms(lambda: za @ zb), flops=8 * 512**3)
zf = torch.complex(r(256, 4096), r(256, 4096))
row("c64 fft [256,4096] last dim", median_ms(lambda: torch.fft.fft(zf, dim=-1)))
zm = torch.complex(r(256, 1000), r(256, 1000))
row("c64 fft [256,1000] last dim", median_ms(lambda: torch.fft.fft(zm, dim=-1)))
zl = torch.complex(r(16, 65536), r(16, 65536))
row("c64 fft [16,65536] last dim", median_ms(lambda: torch.fft.fft(zl, dim=-1)))
zp = torch.complex(r(256, 1009), r(256, 1009))
row("c64 fft [256,1009] last dim", median_ms(lambda: torch.fft.fft(zp, dim=-1)))
t4 = r(4)


def chain_eager():
    y = t4
    for _ in range(100):
        y = y + 1
        torch.cuda.synchronize()  # kiln's row evaluates after each op


row("10k x=x+1 on [4], eval each (us/op)", median_ms(chain_eager, inner=1) * 1e3 / 100,
    unit="us")


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 7 * 7, 1024), nn.ReLU(), nn.Dropout(0.4),
                         nn.Linear(1024, 10)).to(dev)


def train_ms(batch, graphs, steps=None):
    steps = steps or (50 if quick else 200)
    torch.manual_seed(1)
    model = cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=graphs)
    loss_f = nn.CrossEntropyLoss()
    x = r(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,), device=dev, generator=g)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_f(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if not graphs:
        return median_ms(step, reps=5, inner=steps // 5)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return median_ms(graph.replay, reps=5, inner=steps // 5)


row("CNN training step, batch 64, eager (ms/step)", train_ms(64, False))
row("CNN training step, batch 64, CUDA graph (ms/step)", train_ms(64, True))
row("CNN training step, batch 512, eager (ms/step)", train_ms(512, False))
