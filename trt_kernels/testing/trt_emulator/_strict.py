"""Strictness: an attribute the emulator does not implement is an ``AttributeError`` naming it,
and objects that TensorRT's bindings cannot pickle cannot be pickled here either.

The message says which of two things it is: a name the emulated TensorRT version does not have
(another modeled line has it: "does not exist in TensorRT 11.0.0.114 (removed in 11.0)"), or a
name the emulator leaves out ("is not implemented by the TensorRT emulator")."""

from . import _version


def missing_member(cls, name: str) -> str:
    """The ``AttributeError`` message for ``cls.name``, looked up under ``cls`` and its bases."""
    owners = [k.__name__ for k in cls.__mro__[1:] if k.__module__.startswith("tensorrt.tensorrt")]
    return _version.missing(f"{cls.__name__}.{name}", *owners)


class Strict:
    """Base of the emulated native classes: a missing attribute says which one, and whether the
    emulated TensorRT lacks it or the emulator does."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise AttributeError(missing_member(type(self), name))


def unpicklable(cls):
    """Make ``cls`` refuse pickling (and ``copy.copy``/``deepcopy``) as pybind11 classes without
    pickle support do."""

    def __reduce_ex__(self, protocol):
        raise TypeError(f"cannot pickle 'tensorrt.tensorrt.{cls.__name__}' object")

    cls.__reduce_ex__ = __reduce_ex__
    return cls
