"""The pytest suite of the kiln package. Run against a build tree with
PYTHONPATH=<build>/python (ctest's python.pytest does), or after pip install."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)
