"""The named tuples of operators with named returns (torch.return_types): ``x.max(dim=0)``
is a ``ratten.return_types.max`` with fields ``values`` and ``indices``.

torch builds them as C structseqs; these are ``collections.namedtuple`` classes with the same
names and fields (made on first use), so attribute access, indexing, unpacking and
``isinstance(r, tuple)`` behave the same. The repr differs in layout only.
"""

import collections

_classes = {}


def _make(name, fields):
    cls = _classes.get(name)
    if cls is None:
        cls = collections.namedtuple(name, fields, module=__name__)
        _classes[name] = cls
        globals()[name] = cls
    return cls
