"""Records (the package's dataclasses) whose methods are written in the source.

``@dataclass`` writes each class's methods (a frozen one: ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ``__delattr__``) as text and compiles them when the class is
defined, every time the module is imported: bytecode caches do not cover them. That was about
0.4 ms per class on the CPU machine, half of ``import trt_kernels`` for the package's twenty-odd
dataclasses. A record instead writes its ``__init__`` by hand (storing its arguments in
``self.__dict__``) and takes the other methods from :class:`Record` / :class:`Frozen`, which
behave as the generated ones do (``__eq__`` / ``__hash__`` compare the fields as a tuple,
``__repr__`` lists them, a frozen record raises ``dataclasses.FrozenInstanceError`` on
assignment). :func:`record` then has the class's fields registered with ``dataclasses`` (which
generates nothing) the first time anything asks for them, so ``dataclasses.fields`` / ``replace`` /
``asdict`` / ``is_dataclass`` work on records as on any dataclass, and an import that never asks pays
nothing for it (the registration, ~0.1 ms per class, was about 2 ms of every ``import trt_kernels`` for
the spec's and expressions' 18 classes). The package's internal records (:func:`plain_record`) are never
registered: they list their fields in ``__match_args__`` (their ``field()`` defaults stay on the class,
unused by the hand-written ``__init__``) and :func:`replace` copies them.
``tests/unit/test_records.py`` checks every record against what ``@dataclass`` makes of the same
fields, and that nothing ``import trt_kernels`` loads generates dataclass methods.
"""

from __future__ import annotations

import threading
from dataclasses import FrozenInstanceError, dataclass
from typing import Any, Tuple, TypeVar

T = TypeVar("T", bound=type)


class _Factory:
    """The default of a field with a ``default_factory`` in a hand-written ``__init__`` (shown as
    ``<factory>``, as dataclasses show it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Any = _Factory()


_REGISTERING = threading.RLock()  # (re-entered where a record's base is a record: dataclasses asks the base)


class _Unregistered:
    """What ``__dataclass_fields__`` and ``__dataclass_params__`` are on a :func:`record` class until
    something asks for one: asked (by ``dataclasses.fields`` / ``is_dataclass`` / ``replace`` / ``asdict``,
    on the class, an instance or a subclass), it has ``dataclasses`` register the class, which puts the
    real values in place of both, and returns its own. (A non-data descriptor in the class's own
    namespace: nothing else is looked up differently.)"""

    __slots__ = ("owner", "name")

    def __init__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner, name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        owner = self.owner
        with _REGISTERING:
            if owner.__dict__.get(self.name) is self:
                dataclass(init=False, repr=False, eq=False)(owner)
        return owner.__dict__[self.name]


def registered(cls: type) -> bool:
    """Whether the :func:`record` class ``cls`` has been registered with ``dataclasses`` yet (tests)."""
    return not isinstance(cls.__dict__.get("__dataclass_fields__"), _Unregistered)


def record(cls: T) -> T:
    """A record users build and may take apart with ``dataclasses`` (the spec's and expressions'): its
    methods are its own, its annotated fields are registered with ``dataclasses`` when first asked for."""
    inherited = [n for base in reversed(cls.__mro__[1:]) for n in base.__dict__.get("__match_args__", ())]
    cls.__match_args__ = tuple(dict.fromkeys([*inherited, *cls.__dict__.get("__annotations__", {})]))  # as dataclasses
    for name in ("__dataclass_fields__", "__dataclass_params__"):
        setattr(cls, name, _Unregistered(cls, name))
    return cls


def plain_record(cls: T) -> T:
    """List ``cls``'s annotated fields, in order, as its ``__match_args__``, without registering them with
    ``dataclasses`` (which costs ~0.05-0.1 ms per class at every import, for the package's internal
    records). :func:`replace` copies one with changes."""
    cls.__match_args__ = tuple(cls.__dict__.get("__annotations__", {}))  # type: ignore[attr-defined]
    return cls


def replace(obj: Any, **changes: Any) -> Any:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace`` for any record)."""
    return type(obj)(**{**{n: getattr(obj, n) for n in obj.__match_args__}, **changes})


def record_repr(self: Any) -> str:
    """``Name(field=value, ...)``, as ``@dataclass`` writes it."""
    return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__match_args__)})"


class Record:
    """A mutable record: ``__repr__`` and ``__eq__`` over its fields; unhashable (as ``@dataclass``)."""

    __slots__ = ()
    __match_args__: Tuple[str, ...] = ()  # the field names, in order (set by :func:`record`)

    def _field_values(self) -> Tuple[Any, ...]:
        return tuple([getattr(self, n) for n in self.__match_args__])

    __repr__ = record_repr

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._field_values() == other._field_values()  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Frozen(Record):
    """An immutable record: hashable over its fields; assigning or deleting a field raises
    ``dataclasses.FrozenInstanceError``."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._field_values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
