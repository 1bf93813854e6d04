"""``ratten.nn`` (torch.nn): the functional interface so far."""

from . import functional

__all__ = ["functional"]
