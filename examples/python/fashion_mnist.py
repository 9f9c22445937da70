"""The main training job in Python: the Fashion-MNIST CNN of examples/fashion_mnist (conv 5x5x32 +
ReLU, max-pool 2, conv 5x5x64 + ReLU, max-pool 2, dense 1024 + ReLU, dropout 0.4, dense 10), Adam
at lr 1e-3 times 0.7 after each epoch, batch 64, with the same seed handling as the C++ example.

    PYTHONPATH=build/python python3 examples/python/fashion_mnist.py --epochs 1 --threads 2
"""

import argparse
import time

import kiln
import kiln.nn as nn


def make_model(small: bool) -> nn.Sequential:
    c1, c2, hidden = (8, 16, 128) if small else (32, 64, 1024)
    return nn.Sequential(
        nn.Conv2d(1, c1, 5, 1, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 5, 1, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 7 * 7, hidden), nn.ReLU(), nn.Dropout(0.4),
        nn.Linear(hidden, 10))


def evaluate(model, images, labels, batch=500):
    model.eval()
    loss_sum, correct = 0.0, 0
    for first in range(0, images.shape[0], batch):
        x, y = images[first:first + batch], labels[first:first + batch]
        logits = model(x)
        loss = nn.cross_entropy(logits, y)
        right = nn.correct_count(logits, y)
        kiln.eval_all([loss, right])
        loss_sum += loss.item() * y.shape[0]
        correct += right.item()
    model.train()
    n = images.shape[0]
    return loss_sum / n, correct / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=0, help="kiln's threads (0: kiln's default)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="train on the first N images (0: all)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--lr-decay", type=float, default=0.7)
    p.add_argument("--small", action="store_true", help="conv 8 and 16 channels, dense 128")
    args = p.parse_args()
    if args.threads > 0:
        kiln.set_num_threads(args.threads)
    nn.manual_seed(args.seed)

    images, labels = kiln.data.load_fashion_mnist("train")
    test_images, test_labels = kiln.data.load_fashion_mnist("test")
    if args.limit > 0:
        images, labels = images[:args.limit], labels[:args.limit]
    print(f"Fashion-MNIST: {images.shape[0]} training and {test_images.shape[0]} test images")

    model = make_model(args.small)
    opt = nn.Adam(model.parameters(), lr=args.lr)
    loader = kiln.data.DataLoader([images, labels], batch_size=args.batch_size, shuffle=True,
                                  seed=args.seed)
    print(f"{'small' if args.small else 'full'} model, {model.num_parameters()} parameters; "
          f"Adam (lr {args.lr}), batch {args.batch_size}, {kiln.num_threads()} threads")
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        loss_sum, seen = 0.0, 0
        for step, (x, y) in enumerate(loader, 1):
            with kiln.gradient_context():
                loss = nn.cross_entropy(model(x), y)
            opt.step(loss)  # forward, backward and update in one evaluation
            loss_sum += loss.item() * y.shape[0]
            seen += y.shape[0]
            if step % max(1, len(loader) // 10) == 0 or step == len(loader):
                rate = seen / (time.perf_counter() - start)
                print(f"epoch {epoch}/{args.epochs}: {step}/{len(loader)} batches  "
                      f"loss {loss_sum / seen:.4f}  {rate:.0f} img/s", flush=True)
        seconds = time.perf_counter() - start
        test_loss, accuracy = evaluate(model, test_images, test_labels)
        print(f"epoch {epoch}/{args.epochs}: train loss {loss_sum / seen:.4f}, test loss "
              f"{test_loss:.4f}, test accuracy {accuracy:.4f} ({seconds:.1f} s training, "
              f"{seen / seconds:.0f} img/s)", flush=True)
        opt.lr = opt.lr * args.lr_decay


if __name__ == "__main__":
    main()
