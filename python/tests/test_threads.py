"""kiln releases the GIL while it evaluates: other Python threads run meanwhile."""

import threading
import time

import kiln


def test_evaluation_releases_the_gil():
    x = kiln.rand(800, 800)
    done = threading.Event()
    ticks = 0

    def work():
        y = x
        for _ in range(6):
            y = (y @ x) * 1e-3
        y.eval()
        done.set()

    worker = threading.Thread(target=work)
    start = time.perf_counter()
    worker.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0)
    worker.join()
    elapsed = time.perf_counter() - start
    # Holding the GIL through the evaluation would leave this loop a handful of turns.
    assert ticks > 100, f"only {ticks} turns of the main thread in {elapsed:.3f} s"


def test_threads_evaluate_side_by_side():
    results = []

    def work(seed):
        kiln.manual_seed(seed)
        results.append((kiln.ones(1000) * seed).sum().item())

    threads = [threading.Thread(target=work, args=(s,)) for s in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [1000.0, 2000.0, 3000.0, 4000.0]
