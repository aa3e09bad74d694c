# The suite runs against the package in the build tree (PYTHONPATH set by
# ctest's python/pytest, or by hand: PYTHONPATH=build/python pytest python/tests).
import numpy as np
import pytest

try:
    import torch
except ImportError:  # PyTorch is optional: its tests skip with the reason
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
