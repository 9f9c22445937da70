#!/usr/bin/env python3
"""Checks kiln's layering: each directory of src/ uses only the directories below it, both in
its #include lines and at link level (the symbols its object files need and which directory's
object files define them). It also checks that no device API type appears outside its backend's
directory, that the front end reads values only through graph/values.hpp, that only a backend sees its storage, and that only the files that make nodes
write a node's IR. Usage: layering.py SOURCE_DIR OBJECT_FILE...

    graph      the IR, storage, shapes, gradient mode: the vocabulary of every layer
    exec       the runtime and the backends (reference, cpu, opencl, cuda)
    api        the C++ front end
    autodiff   gradients, built with the front end's ops
    data       datasets, file formats
    nn         layers, optimisers, training, model files
    capi       the Flint C API over all of them
    distributed  process groups, collectives and data-parallel training, over nn
"""
import collections
import os
import re
import subprocess
import sys

BELOW = {
    "graph": set(),
    "exec": {"graph"},
    "api": {"graph", "exec"},
    "autodiff": {"graph", "exec", "api"},
    "data": {"graph", "exec", "api"},
    "nn": {"graph", "exec", "api", "autodiff", "data"},
    "capi": {"graph", "exec", "api", "autodiff", "data", "nn"},
    "distributed": {"graph", "exec", "api", "autodiff", "data", "nn"},
}
# Public headers that declare vocabulary only (no Tensor): what graph/ may include.
VOCABULARY = {"kiln/types.hpp", "kiln/error.hpp", "kiln/gradient_mode.hpp"}
# The backend interface, devices (executors as places), anomaly mode and the runtime's profiles:
# what exec/ may include besides the vocabulary.
BACKEND_INTERFACE = {"kiln/executor.hpp", "kiln/profile.hpp", "kiln/device.hpp",
                     "kiln/anomaly.hpp"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Device backends' directories under exec/ (the CPU backend shares host buffers with everyone).
BACKEND_DIRECTORY = re.compile(r"^exec/(opencl|cuda)/")
# A device API's own types, calls and headers (OpenCL, CLBlast, CUDA, NVRTC, cuBLAS, cuDNN, cuFFT):
# only its backend's directory names them, in code (comments and strings aside); the rest of
# exec/ reaches devices through exec/device/device_api.hpp.
DEVICE_API = re.compile(r"\b(cl_[a-z]\w*|CL_[A-Z]\w*|cl[A-Z]\w*|clblast::\w+|CU[a-z]\w*|"
                        r"cuda[A-Z]\w*|nvrtc[A-Z]\w*|cublas\w*|cudnn\w*|cufft\w*)\b")
DEVICE_HEADER = re.compile(r'^\s*#\s*include\s+<(CL/|clblast|cuda|nvrtc|cublas|cudnn|cufft)', re.M)
STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"')
# Above the runtime, a node's values are read and written through graph/values.hpp (which a
# device backend's storage will synchronise), never through Node::result itself.
RESULT_ACCESS = re.compile(r"->result\b")
# Outside the C API (whose CNode has a `result` member of its own), `.result` is Node's too.
RESULT_MEMBER = re.compile(r"\.result\b")
FRONT_END = {"api", "autodiff", "capi", "data", "nn", "distributed"}
# Files allowed to touch Node::result, with the reason (none today).
RESULT_EXCEPTIONS = set()
# A built node's IR (op, inputs, attributes, view) never changes. Writes to those fields happen
# only where nodes are made, and in the one step where an evaluated node becomes a leaf.
IR_WRITE = re.compile(r"->(op|inputs|attrs|view|view_base|dtype|shape|symbolic|"
                      r"in_gradient_context)\s*(=(?!=)|\.(clear|push_back|emplace_back|reset|"
                      r"swap|assign|resize)\()")
IR_WRITERS = {
    os.path.join("api", "builder.cpp"): "makes every node of the front end",
    os.path.join("api", "function.cpp"): "makes the private copy of a compiled function's graph",
    os.path.join("exec", "executor.cpp"): "an evaluated node becomes a leaf (Flint's "
                                          "fOptimizeMemory), under the graph's write lock",
    os.path.join("exec", "reference_narrow_floats.cpp"): "makes the private f32 stand-ins that "
                                                         "compute a 16-bit float node's reference",
}


def layer_of(path, src):
    rel = os.path.relpath(path, src)
    return rel.split(os.sep)[0]


def check_includes(src):
    problems = []
    for root, _, files in os.walk(src):
        for name in files:
            path = os.path.join(root, name)
            layer = layer_of(path, src)
            if layer not in BELOW:
                problems.append(f"{path}: directory {layer} has no place in the layering table")
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            rel = os.path.relpath(path, src)
            if layer in FRONT_END and rel not in RESULT_EXCEPTIONS:
                for line_no, line in enumerate(text.splitlines(), 1):
                    code = line.split("//")[0]
                    if RESULT_ACCESS.search(code) or (layer != "capi" and RESULT_MEMBER.search(code)):
                        problems.append(f"{path}:{line_no}: {layer}/ reads Node::result "
                                        "(use graph/values.hpp)")
            if rel not in IR_WRITERS:
                for line_no, line in enumerate(text.splitlines(), 1):
                    write = IR_WRITE.search(line.split("//")[0])
                    # The C API's CNode has a `shape` of its own (the C struct's dimensions).
                    if write and not (layer == "capi" and write.group(1) == "shape"):
                        problems.append(f"{path}:{line_no}: writes a built node's IR (only "
                                        f"{', '.join(sorted(IR_WRITERS))} may)")
            if not BACKEND_DIRECTORY.match(rel.replace(os.sep, "/")):
                for line_no, line in enumerate(text.splitlines(), 1):
                    code = STRING_LITERAL.sub('""', line.split("//")[0])
                    api = DEVICE_API.search(code) or DEVICE_HEADER.search(line)
                    if api:
                        problems.append(f"{path}:{line_no}: names {api.group(0).strip()}, which "
                                        "only its backend's directory may")
            for header in INCLUDE.findall(text):
                # A backend's storage and device types stay inside it: only its own directory
                # includes its headers (everyone else sees graph/device_memory.hpp).
                backend = BACKEND_DIRECTORY.match(header)
                if backend and not rel.startswith(os.path.join("exec", backend.group(1), "")):
                    problems.append(f"{path}: includes {header}, a header of the "
                                    f"{backend.group(1)} backend")
                top = header.split("/")[0]
                if top == "kiln":
                    allowed = True
                    if layer == "graph":
                        allowed = header in VOCABULARY
                    elif layer == "exec":
                        allowed = header in VOCABULARY | BACKEND_INTERFACE
                    if not allowed:
                        problems.append(f"{path}: {layer}/ includes the front-end header {header}")
                elif top in BELOW and top != layer and top not in BELOW[layer]:
                    problems.append(f"{path}: {layer}/ includes {header}, a layer above it")
    return problems


def symbols(obj, defined):
    args = ["nm", "-C", "--defined-only" if defined else "--undefined-only", obj]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    result = set()
    for line in out.splitlines():
        parts = line.split(None, 2)
        if defined:
            # Global text, data, read-only data and BSS (weak and inline symbols are everywhere).
            if len(parts) == 3 and parts[1] in "TDRB":
                result.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            result.add(parts[1])
    return result


def check_links(objects):
    layer_of_obj = {}
    for obj in objects:
        m = re.search(r"/src/([a-z_]+)/", obj)
        if m and m.group(1) in BELOW:
            layer_of_obj[obj] = m.group(1)
    definers = collections.defaultdict(set)
    for obj, layer in layer_of_obj.items():
        for s in symbols(obj, True):
            definers[s].add(layer)
    problems = []
    for obj, layer in layer_of_obj.items():
        for s in sorted(symbols(obj, False)):
            for other in definers.get(s, ()):
                if other != layer and other not in BELOW[layer]:
                    problems.append(f"{os.path.basename(obj)} ({layer}/) needs {s} from {other}/")
    return problems, len(layer_of_obj)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    src = os.path.join(sys.argv[1], "src")
    problems = check_includes(src)
    link_problems, count = check_links(sys.argv[2:])
    problems += link_problems
    if count == 0:
        problems.append("no object files of src/ were given: the link-level check saw nothing")
    for p in problems:
        print(p)
    print(f"layering: {count} object files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
