"""``ratten.Size``: the type of ``Tensor.shape`` and ``Tensor.size()``, a tuple of ints that
prints as torch.Size does."""


class Size(tuple):
    """A tensor's sizes: a tuple subclass (``ratten.Size([2, 3])``)."""

    __slots__ = ()

    def __repr__(self):
        return f"ratten.Size({list(self)!r})"

    __str__ = __repr__

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def numel(self):
        """The number of elements a tensor of these sizes has."""
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))
