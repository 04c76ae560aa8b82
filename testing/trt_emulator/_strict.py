"""Strictness: an attribute the emulator does not implement is an ``AttributeError`` naming it,
and objects that TensorRT's bindings cannot pickle cannot be pickled here either."""


class Strict:
    """Base of the emulated native classes: a missing attribute says which one, and that it is
    the emulator's gap (not necessarily TensorRT's)."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"tensorrt.{type(self).__name__}.{name} is not implemented by the TensorRT emulator "
                             "(trt_kernels.testing.trt_emulator)")


def unpicklable(cls):
    """Make ``cls`` refuse pickling (and ``copy.copy``/``deepcopy``) as pybind11 classes without
    pickle support do."""

    def __reduce_ex__(self, protocol):
        raise TypeError(f"cannot pickle 'tensorrt.tensorrt.{cls.__name__}' object")

    cls.__reduce_ex__ = __reduce_ex__
    return cls
