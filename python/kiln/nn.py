"""kiln.nn: layers, losses and optimisers.

The layers kiln implements in C++ (``Linear``, ``Conv2d``, ...) are ``NativeModule``s. Modules
written in Python derive from :class:`Module`, as in PyTorch: their attributes that are
parameters, modules, or lists and dicts of them are found by ``parameters()``.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Tuple

from ._kiln import Tensor
from ._kiln.nn import *  # noqa: F401,F403
from ._kiln.nn import NativeModule, Parameter, load, save


def _parameter_binary(name: str):
    def method(self: Parameter, other):
        return getattr(self.value, name)(other)

    method.__name__ = name
    return method


# A parameter computes as its current value: w @ x, w * 2, -w, w.sum() ...
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__pow__",
              "__neg__", "__getitem__"):
    setattr(Parameter, _name, _parameter_binary(_name))


def _parameter_getattr(self: Parameter, name: str):
    # Any other Tensor method (t, sum, reshape, ...) of the current value.
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(self.value, name)


Parameter.__getattr__ = _parameter_getattr


class Module:
    """The base of modules written in Python: define ``forward``; assign layers, parameters and
    sub-modules as attributes."""

    training: bool = True

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def _children(self) -> Iterator[Tuple[str, object]]:
        for name, value in vars(self).items():
            if isinstance(value, (Module, NativeModule, Parameter)):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, v in enumerate(value):
                    if isinstance(v, (Module, NativeModule, Parameter)):
                        yield f"{name}.{i}", v
            elif isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(v, (Module, NativeModule, Parameter)):
                        yield f"{name}.{k}", v

    def named_parameters(self, prefix: str = "") -> List[Tuple[str, Parameter]]:
        """(name, Parameter) pairs with PyTorch's dotted names, each slot once."""
        out: List[Tuple[str, Parameter]] = []
        for name, child in self._children():
            full = prefix + name
            if isinstance(child, Parameter):
                out.append((full, child))
            elif isinstance(child, Module):
                out.extend(child.named_parameters(full + "."))
            else:
                out.extend((f"{full}.{n}", p) for n, p in child.named_parameters())
        unique: List[Tuple[str, Parameter]] = []
        for name, p in out:
            if not any(p.same_slot(q) for _, q in unique):
                unique.append((name, p))
        return unique

    def parameters(self) -> List[Parameter]:
        return [p for _, p in self.named_parameters()]

    def named_buffers(self, prefix: str = "") -> List[Tuple[str, Parameter]]:
        """State that is not trained (BatchNorm's running statistics), named as the parameters."""
        out: List[Tuple[str, Parameter]] = []
        for name, child in self._named_modules():
            full = prefix + name
            if isinstance(child, Module):
                out.extend(child.named_buffers(full + "."))
            else:
                out.extend((f"{full}.{n}", b) for n, b in child.named_buffers())
        return out

    def _named_modules(self) -> Iterator[Tuple[str, object]]:
        for name, child in self._children():
            if isinstance(child, (Module, NativeModule)):
                yield name, child

    def modules(self) -> Iterator[object]:
        yield self
        for _, child in self._children():
            if isinstance(child, Module):
                yield from child.modules()
            elif isinstance(child, NativeModule):
                yield child

    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            if isinstance(m, Module):
                m.training = mode
            else:
                m.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.zero_grad()

    def to(self, where) -> "Module":
        """Moves every parameter and buffer to a device (``"opencl"``: the forward pass, its
        gradients and the optimiser's steps then run there) or converts them to a floating
        dtype, as torch's ``module.to``."""
        for _, p in self.named_parameters() + self.named_buffers():
            p.to(where)
        return self

    def state_dict(self) -> Dict[str, Tensor]:
        """Parameters then buffers, by name (PyTorch's state_dict names)."""
        return {name: p.value for name, p in self.named_parameters() + self.named_buffers()}

    def load_state_dict(self, state: Dict[str, object]) -> None:
        """Sets every parameter from ``state`` (tensors or arrays, checked first: a missing name
        or another shape raises kiln.Error and changes nothing)."""
        named = self.named_parameters() + self.named_buffers()
        missing = [n for n, _ in named if n not in state]
        if missing:
            raise KeyError(f"load_state_dict: no value for {missing}")
        from ._kiln import tensor

        values = {n: tensor(state[n]) for n, _ in named}
        for n, p in named:
            if tuple(values[n].shape) != tuple(p.shape):
                raise ValueError(f"load_state_dict: {n} has shape {p.shape}, "
                                 f"the value {values[n].shape}")
        for n, p in named:
            p.copy_(values[n])

    def save(self, path: str) -> None:
        """The parameters and buffers to a kiln model file (written atomically)."""
        save(self.named_parameters() + self.named_buffers(), path)

    def load(self, path: str) -> None:
        load(self.named_parameters() + self.named_buffers(), path)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class Sequential(Module):
    """Modules applied in order: ``Sequential(Conv2d(1, 8, 3), ReLU(), ...)``."""

    def __init__(self, *layers) -> None:
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def __getitem__(self, i: int):
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def named_parameters(self, prefix: str = "") -> List[Tuple[str, Parameter]]:
        # PyTorch's names: "0.weight", "3.bias", ...
        out: List[Tuple[str, Parameter]] = []
        for i, layer in enumerate(self.layers):
            if isinstance(layer, Module):
                out.extend(layer.named_parameters(f"{prefix}{i}."))
            elif isinstance(layer, NativeModule):
                out.extend((f"{prefix}{i}.{n}", p) for n, p in layer.named_parameters())
        return out

    def _named_modules(self) -> Iterator[Tuple[str, object]]:
        for i, layer in enumerate(self.layers):
            if isinstance(layer, (Module, NativeModule)):
                yield str(i), layer

    def __repr__(self) -> str:
        inner = "\n".join(f"  ({i}): {layer!r}" for i, layer in enumerate(self.layers))
        return f"Sequential(\n{inner}\n)"


def save_checkpoint(model, optimizer, path: str, extra=None) -> None:
    """A training checkpoint in one safetensors file, as kiln's C++ nn::save_checkpoint lays it
    out: the parameters as "model.<name>", the optimiser's state_dict() as
    "optimizer.<name>", and `extra` (a dict of tensors: an epoch, a schedule's state) as
    "extra.<name>". Written atomically."""
    from ._kiln import save_safetensors

    tensors = {f"model.{n}": p.value for n, p in model.named_parameters()}
    tensors.update({f"optimizer.{n}": t for n, t in optimizer.state_dict().items()})
    tensors.update({f"extra.{n}": t for n, t in (extra or {}).items()})
    save_safetensors(path, tensors)


def load_checkpoint(model, optimizer, path: str) -> Dict[str, Tensor]:
    """Restores what save_checkpoint wrote (the model's parameters and the optimiser's state,
    everything checked before anything changes) and returns the extra tensors."""
    from ._kiln import load_safetensors

    file = load_safetensors(path)
    params = {n[len("model."):]: t for n, t in file.items() if n.startswith("model.")}
    state = {n[len("optimizer."):]: t for n, t in file.items() if n.startswith("optimizer.")}
    named = model.named_parameters()
    missing = [n for n, _ in named if n not in params]
    if missing:
        raise KeyError(f"load_checkpoint: {path} has no value for {missing}")
    for n, p in named:
        if tuple(params[n].shape) != tuple(p.shape):
            raise ValueError(f"load_checkpoint: {n} has shape {p.shape} in the model, "
                             f"{params[n].shape} in {path}")
    optimizer.load_state_dict(state)  # checks the whole state before it changes anything
    for n, p in named:
        p.copy_(params[n])
    return {n[len("extra."):]: t for n, t in file.items() if n.startswith("extra.")}
