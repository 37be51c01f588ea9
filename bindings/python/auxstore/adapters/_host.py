"""Host memory an engine describes by address: its pinned pool's pages."""

import ctypes


def host_view(ptr, size):
    """A writable buffer over ``size`` bytes of host memory at address
    ``ptr`` (an engine's pinned pool page): auxstore reads into it and
    writes from it in place. The engine keeps the memory alive."""
    if ptr == 0 and size > 0:
        raise ValueError("a host page at address 0")
    return (ctypes.c_ubyte * size).from_address(ptr)


def as_ints(values):
    """A list of ints from a torch tensor, a numpy array or any iterable."""
    if hasattr(values, "tolist"):
        return [int(v) for v in values.tolist()]
    return [int(v) for v in values]
