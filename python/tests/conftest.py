import pytest

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:  # CI has no torch; the comparisons with it are skipped.
    HAVE_TORCH = False

requires_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
