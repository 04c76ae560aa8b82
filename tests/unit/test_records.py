"""The package's records behave as the dataclasses they replace (``trt_kernels._record``).

Each record writes its ``__init__`` by hand so that defining it generates no code at import; here
every record of every module ``import trt_kernels`` and its public names load (and of the plan, launch and
launcher modules, which a first call loads) is compared with what ``@dataclass``
makes of the same fields: the constructor's parameters (names, order, defaults, annotations),
field values, fresh default factories, ``repr``, equality, hashing, immutability,
``dataclasses.replace`` and copying. ``tests/unit/test_startup.py`` checks, in a fresh
interpreter, that importing the package compiles no generated source at all.
"""

import copy
import dataclasses
import importlib
import inspect
import subprocess
import sys

import pytest

from trt_kernels import _record
from trt_kernels._record import FACTORY, Frozen, Record

# what a fresh `import trt_kernels` loads with its public names (imported when first used: the API's modules; not
# TritonConfig, whose Triton modules load only for Triton ops), and
# the modules a first call loads (the plan, the launch, the launcher)
_LIST = ("import sys, trt_kernels; [getattr(trt_kernels, n) for n in trt_kernels.__all__ if n != 'TritonConfig']; "
         "print(' '.join(m for m in sys.modules if m.startswith('trt_kernels')))")
_LOADED = subprocess.run([sys.executable, "-c", _LIST], capture_output=True, text=True, check=True).stdout.split()
MODULES = sorted(set(_LOADED) | {"trt_kernels.plan", "trt_kernels.eager.driver", "trt_kernels.eager.compiled_launcher"})


def _records():
    """Every record: registered with dataclasses (``@record``) or listing its fields (``@plain_record``)."""
    found = {}
    for name in MODULES:
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            if isinstance(obj, type) and obj.__module__ == name and obj not in (Record, Frozen) and (
                    dataclasses.is_dataclass(obj) or "__match_args__" in vars(obj)):
                found[f"{name}.{obj.__qualname__}"] = obj
    return found


def _fields(cls):
    """The fields of a record as ``dataclasses`` sees them: a plain record's own annotations and
    class-level defaults, read through a copy of its class that ``dataclasses`` processes."""
    if dataclasses.is_dataclass(cls):
        return dataclasses.fields(cls)
    ann = vars(cls)["__annotations__"]
    ns = {"__annotations__": dict(ann), "__module__": cls.__module__}
    ns.update({n: vars(cls)[n] for n in ann if n in vars(cls)})
    return dataclasses.fields(dataclasses.dataclass(init=False, repr=False, eq=False)(type(cls.__name__, (), ns)))


def _replace(obj, **changes):
    return dataclasses.replace(obj, **changes) if dataclasses.is_dataclass(obj) else _record.replace(obj, **changes)


def _asdict(obj):
    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else {f.name: getattr(obj, f.name)
                                                                         for f in _fields(type(obj))}


RECORDS = _records()


def test_the_package_defines_its_dataclasses_as_records():
    assert "trt_kernels.spec" in MODULES and len(RECORDS) >= 20, sorted(RECORDS)
    def generated(cls):
        return [m for m, f in vars(cls).items()
                if getattr(getattr(f, "__code__", None), "co_filename", "") == "<string>"]

    generated = {n: generated(c) for n, c in RECORDS.items()}
    assert {n: ms for n, ms in generated.items() if ms} == {}
    # what users build (the spec, size expressions) stays a dataclass for them; the internal records
    # are not registered with dataclasses (that registration alone cost ~1 ms of every import)
    public = {n for n in RECORDS if n.startswith(("trt_kernels.spec.", "trt_kernels.expr."))}
    assert {n for n, c in RECORDS.items() if dataclasses.is_dataclass(c)} == public
    assert len(RECORDS) - len(public) >= 15
    # issue 20's (scalar defaults and tuples, Scalar() leaves, type parameters, size checks) and the
    # compiled launcher's records are among them
    assert {"trt_kernels.spec.ScalarInput", "trt_kernels.expr.Scalar", "trt_kernels.expr.ScalarOf",
            "trt_kernels.signature.CheckSig", "trt_kernels.plan.CheckPlan",
            "trt_kernels.eager.compiled_launcher.Launcher"} <= set(RECORDS)


def test_a_record_is_registered_with_dataclasses_when_first_asked():
    """:func:`trt_kernels._record.record` defers ``dataclasses``' registration until something asks for the
    fields, on the class, an instance or a subclass; the class that declared the fields is the one registered."""
    from typing import Optional

    @_record.record
    class Point(Frozen):
        x: int
        label: Optional[str] = None

        def __init__(self, x: int, label: Optional[str] = None) -> None:
            self.__dict__.update(x=x, label=label)

    class Sub(Point):
        pass

    assert not _record.registered(Point) and Point.__match_args__ == ("x", "label")
    p = Sub(3)  # a subclass's instance asks first
    assert [f.name for f in dataclasses.fields(p)] == ["x", "label"] and _record.registered(Point)
    assert dataclasses.is_dataclass(Point) and dataclasses.is_dataclass(p)
    assert Point.__dataclass_params__.eq is False and "__dataclass_fields__" not in vars(Sub)
    assert dataclasses.replace(Point(1), label="a") == Point(1, "a")
    assert dataclasses.asdict(Point(2, "b")) == {"x": 2, "label": "b"}

    @_record.record
    class Other(Record):
        y: float

        def __init__(self, y: float) -> None:
            self.y = y

    assert dataclasses.asdict(Other(1.5)) == {"y": 1.5} and _record.registered(Other)

    @_record.record
    class Base(Frozen):
        x: int

        def __init__(self, x: int) -> None:
            self.__dict__.update(x=x)

    @_record.record
    class Labelled(Base):  # a record whose base is one: registering it asks the base, not registered yet
        tag: str = ""

        def __init__(self, x: int, tag: str = "") -> None:
            self.__dict__.update(x=x, tag=tag)

    assert Labelled.__match_args__ == ("x", "tag") and repr(Labelled(1, "a")).endswith("Labelled(x=1, tag='a')")
    assert [f.name for f in dataclasses.fields(Labelled)] == ["x", "tag"] and _record.registered(Base)
    assert Labelled(1) != Labelled(1, "b") and hash(Labelled(2, "c")) == hash(Labelled(2, "c"))


def test_new_fields_keep_their_defaults():
    """The fields main's issue-20 work added to existing records, with their defaults."""
    from trt_kernels.signature import Signature
    from trt_kernels.spec import KernelSpec, ScalarInput

    assert ScalarInput("eps", float).default is None and ScalarInput("eps", float, 1e-06).default == 1e-06
    assert ScalarInput("pads", (int, 4)) == ScalarInput("pads", (int, 4), None)
    spec = KernelSpec("src", "k")
    assert spec.type_params is None and tuple(spec.checks) == ()
    fields = {f.name: f.default for f in _fields(Signature)}
    assert fields["type_params"] == ("T",) and fields["checks"] == ()


def test_size_checks_are_immutable_values_defined_without_generated_code():
    """SameShape / SameDim take their operands positionally (not a record's fields): plain immutable
    classes whose methods are in the source; equal and hashed by kind and operands."""
    from trt_kernels.expr import Numel
    from trt_kernels.spec import SameDim, SameShape

    for cls in (SameShape, SameDim):
        assert not dataclasses.is_dataclass(cls)
        for klass in cls.__mro__[:-1]:
            for f in vars(klass).values():
                assert getattr(getattr(f, "__code__", None), "co_filename", "") != "<string>", (klass, f)
    a, b = SameShape("x", "y"), SameShape("x", "y")
    assert a == b and hash(a) == hash(b) and a != SameShape("y", "x") and a.inputs == ("x", "y")
    assert repr(a) == "SameShape('x', 'y')"
    d = SameDim(("x", -1), Numel("w"))
    assert d == SameDim(("x", -1), Numel("w")) and d != SameShape(("x", -1), Numel("w"))
    assert d.operands == (("x", -1), Numel("w"))
    with pytest.raises(AttributeError):
        a.inputs = ("z",)
    with pytest.raises(AttributeError):
        d._args = ()


def _reference(cls):
    """What ``@dataclass`` makes of ``cls``'s fields (frozen for a Frozen record; with ``eq`` unless the
    record keeps identity comparison)."""
    ns = {"__annotations__": {}, "__qualname__": cls.__qualname__, "__module__": cls.__module__}
    for f in _fields(cls):
        ns["__annotations__"][f.name] = f.type
        if f.default is not dataclasses.MISSING:
            ns[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            ns[f.name] = dataclasses.field(default_factory=f.default_factory)
    eq = issubclass(cls, Record)
    return dataclasses.dataclass(frozen=issubclass(cls, Frozen), eq=eq)(type(cls.__name__, (), ns))


def _values(cls, tag):
    return {f.name: (tag, i, f.name) for i, f in enumerate(_fields(cls))}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_record_behaves_as_its_dataclass(name):
    cls = RECORDS[name]
    ref = _reference(cls)

    def params(c):
        return [(p.name, p.kind, repr(p.default), p.annotation)
                for p in inspect.signature(c.__init__).parameters.values()]

    assert params(cls) == params(ref)
    assert FACTORY is not None and repr(FACTORY) == "<factory>"

    # every field given
    vals = _values(cls, "a")
    a, r = cls(**vals), ref(**vals)
    assert {k: getattr(a, k) for k in vals} == vals
    assert repr(a) == repr(r)
    # only what has no default given: the defaults, and a fresh object from each factory
    required = {f.name: vals[f.name] for f in _fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    d1, d2, rd = cls(**required), cls(**required), ref(**required)
    for f in _fields(cls):
        got, want = getattr(d1, f.name), getattr(rd, f.name)
        if f.name == "_lock":  # a fresh lock each: compare kinds
            assert type(got) is type(want)
        else:  # (objects compared by identity: by their repr)
            assert got == want or (type(got) is type(want) and repr(got) == repr(want)), f.name
        if f.default_factory is not dataclasses.MISSING and isinstance(got, (list, dict)):
            assert got is not getattr(d2, f.name), f"{f.name}: one object shared by two records"

    # equality and hashing
    other = dict(vals, **{next(iter(vals)): ("b", "changed")})
    if issubclass(cls, Record):
        assert a == cls(**vals) and a != cls(**other) and a != r  # a dataclass compares equal to its own class only
    else:  # compared and hashed by identity
        assert a != cls(**vals) and a == a and hash(a) == object.__hash__(a)
    if ref.__hash__ is None:
        with pytest.raises(TypeError):
            hash(a)
    elif issubclass(cls, Record):
        assert hash(a) == hash(r)

    # immutability, replace, copies
    first = next(iter(vals))
    if issubclass(cls, Frozen):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(a, first, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(a, first)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(r, first, 1)
    else:
        m = cls(**vals)
        setattr(m, first, ("b", "set"))
        assert getattr(m, first) == ("b", "set")
    b = _replace(a, **{first: ("b", "replaced")})
    assert type(b) is cls and getattr(b, first) == ("b", "replaced")
    assert all(getattr(b, k) == v for k, v in vals.items() if k != first)
    for c in (copy.copy(a), copy.deepcopy(a)):
        assert type(c) is cls and all(getattr(c, k) == v for k, v in vals.items())
    assert _asdict(a) == dataclasses.asdict(r) == vals
