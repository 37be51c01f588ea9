"""Host memory an engine describes by address: its pinned pool's pages."""

import ctypes


def host_view(ptr, size):
    """A writable buffer over ``size`` bytes of host memory at address
    ``ptr`` (an engine's pinned pool page): auxstore reads into it and
    writes from it in place. The engine keeps the memory alive."""
    if ptr == 0 and size > 0:
        raise ValueError("a host page at address 0")
    return (ctypes.c_ubyte * size).from_address(ptr)


def host_address(obj):
    """The address of a host array or tensor's first byte (numpy's
    ``ctypes.data``, torch's ``data_ptr()``, else the buffer protocol)."""
    if hasattr(obj, "data_ptr"):
        return int(obj.data_ptr())
    if hasattr(obj, "ctypes"):
        return int(obj.ctypes.data)
    view = memoryview(obj)
    return ctypes.addressof(ctypes.c_char.from_buffer(view))


def as_ints(values):
    """A list of ints from a torch tensor, a numpy array or any iterable."""
    if hasattr(values, "tolist"):
        return [int(v) for v in values.tolist()]
    return [int(v) for v in values]
