"""kiln: lazily evaluated tensor graphs with fused kernels and reverse-mode autodiff.

Operations build a graph; reading values (``item``, ``tolist``, ``numpy``, printing, ``eval``)
computes it, fusing elementwise chains into single kernels, with the GIL released::

    import kiln
    x = kiln.tensor([[1.0, 2.0], [3.0, 4.0]]).watch()
    with kiln.gradient_context():
        y = (x * x).sum()
    (dx,) = kiln.gradients(y, [x])
    print(dx.numpy())        # [[2. 4.] [6. 8.]]

NumPy, PyTorch and JAX read kiln's values without a copy (``numpy.asarray(t)``,
``torch.from_dlpack(t)``), and kiln theirs (``kiln.from_numpy``, ``kiln.from_dlpack``).
"""

from ._kiln import *  # noqa: F401,F403
from ._kiln import Error, Tensor, __version__, dtype  # noqa: F401

# The extension's submodules are wrapped by the Python modules of the same names.
del nn, data  # noqa: F821
from . import data, nn  # noqa: E402,F401
