"""kiln.data: the DataLoader over arrays, and the Fashion-MNIST files."""

from ._kiln.data import *  # noqa: F401,F403
from ._kiln.data import DataLoader, load_fashion_mnist  # noqa: F401
