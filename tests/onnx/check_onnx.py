#!/usr/bin/env python3
"""Checks the ONNX models tests/onnx/export_models wrote: each passes onnx.checker (with shape
inference) and gives kiln's outputs in ONNX Runtime, floats within float tolerance, integers and
bools exactly. Exits 77 (counted as skipped by ctest) when this Python lacks onnx or onnxruntime.
Usage: check_onnx.py DIRECTORY"""
import pathlib
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:
    print(f"SKIPPED: {sys.executable} cannot import {e.name} (scripts/setup.sh installs onnx and "
          "onnxruntime with pip)")
    sys.exit(77)


def check(model_path):
    model = onnx.load(str(model_path))
    onnx.checker.check_model(model, full_check=True)
    arrays = np.load(model_path.with_suffix(".npz"))
    feeds = {k[3:]: arrays[k] for k in arrays.files if k.startswith("in.")}
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    got = dict(zip(names, session.run(names, feeds)))
    problems = []
    for name in names:
        want = arrays["out." + name]
        have = got[name]
        if have.dtype != want.dtype or have.shape != want.shape:
            problems.append(f"{name}: ONNX Runtime gives {have.dtype}{list(have.shape)}, "
                            f"kiln {want.dtype}{list(want.shape)}")
        elif np.issubdtype(want.dtype, np.integer) or want.dtype == np.bool_:
            if not np.array_equal(have, want):
                problems.append(f"{name}: integers differ\n  onnxruntime {have.ravel()}\n"
                                f"  kiln        {want.ravel()}")
        else:
            tol = 1e-4 if want.dtype == np.float32 else 1e-9
            if not np.allclose(have, want, rtol=tol, atol=tol, equal_nan=True):
                worst = np.nanmax(np.abs(have.astype(np.float64) - want))
                problems.append(f"{name}: floats differ by up to {worst:.3g}\n"
                                f"  onnxruntime {have.ravel()[:8]}\n  kiln        {want.ravel()[:8]}")
    return len(names), problems


def main():
    directory = pathlib.Path(sys.argv[1])
    models = sorted(directory.glob("*.onnx"))
    if not models:
        print(f"no models in {directory}")
        return 1
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}")
    failed = 0
    for path in models:
        try:
            count, problems = check(path)
        except Exception as e:  # a checker or runtime error names the model
            count, problems = 0, [f"{type(e).__name__}: {e}"]
        status = "FAILED" if problems else "ok"
        print(f"{path.stem}: {count} outputs {status}")
        for p in problems:
            print("  " + p)
        failed += bool(problems)
    print(f"{len(models) - failed} of {len(models)} models match kiln")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
