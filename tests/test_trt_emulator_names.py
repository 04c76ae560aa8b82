"""The TensorRT emulator never invents an API (issue 8, item 3): every class, method, property,
attribute and enum member that the emulated native module ``tensorrt.tensorrt`` exposes exists in
the real bindings, checked against the identifiers in the bindings wheel's native ``tensorrt.so``
(pybind11 keeps its class, method, property and enum member names, and its docstrings, as plain
strings). Names beginning with ``_`` are the emulator's own; the names in the emulator's
``_COMPAT`` exist for Torch-TensorRT 2.11 only and are checked separately. CPU only: the ``.so`` is
read as bytes, never loaded (it needs libnvinfer).

What it cannot see: the check is per identifier, not per class, so a real name put on the wrong class
passes (``Weights.count`` did: ``count`` is only an argument of TensorRT's ``Weights`` constructor); and
methods an emulated class inherits from a builtin base (``Dims`` is a ``list``, ``IHostMemory`` a
``bytes``) are not enumerated."""

import ast
import enum
import functools
import importlib.util
import pathlib
import re
from typing import Dict, Optional, Set, Tuple

import pytest

import trt_kernels.testing as testing
from trt_kernels.testing import _standin as standin

EMULATOR_DIR = pathlib.Path(testing.__file__).resolve().parent / "trt_emulator"
NATIVE = "tensorrt.tensorrt"  # the module name the emulator is loaded under
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e\t\n]{2,}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def find_native_so() -> Tuple[Optional[pathlib.Path], str]:
    """The bindings wheel's native module, located without importing ``tensorrt_bindings`` (whose
    ``__init__`` would load libnvinfer): ``(path, "")`` or ``(None, why not)``."""
    folders = []
    found, reason = testing.bootstrap().find_bindings_dir()
    if found is not None:
        folders.append(found)
    try:
        spec = importlib.util.find_spec("tensorrt_bindings")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        folders += [pathlib.Path(p) for p in spec.submodule_search_locations or ()]
    for folder in folders:
        for so in sorted(folder.glob("tensorrt*.so")):
            if so.is_file():
                return so, ""
    if not folders:
        return None, reason or "tensorrt_bindings is not installed"
    return None, f"no tensorrt*.so in {[str(f) for f in folders]} (the wheel's native module)"


class NativeStrings:
    """What ``strings`` shows of a native module: the runs of printable ASCII (docstrings, dotted names
    and mangled symbols kept whole) and the identifier tokens in them.

    :meth:`has` is the check. A name exists when it is a whole token of a run, or when it is the tail of
    a NUL-terminated string: the linker merges string constants that are suffixes of others, so
    pybind11's ``"mark_output"`` is stored once, as the end of ``"unmark_output\\0"``, and TensorRT's
    ``"INPUT"`` as the end of ``"CONDITIONAL_INPUT\\0"``. (So a real name's suffix also passes, as it
    would be a valid C string of the binary; an invented name does not.)"""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.data = path.read_bytes()
        self.runs = tuple(m.group().decode("ascii") for m in _PRINTABLE_RUN.finditer(self.data))
        tokens = set()
        for run in self.runs:
            tokens.update(_IDENTIFIER.findall(run))
        self.tokens = frozenset(tokens)
        self._tails: Dict[str, bool] = {}

    def is_tail(self, name: str) -> bool:
        """``name`` ends a NUL-terminated string of identifier characters (``...name\\0``)."""
        if name not in self._tails:
            pattern = rb"[A-Za-z0-9_]" + re.escape(name.encode("ascii")) + rb"\x00"
            self._tails[name] = _IDENTIFIER.fullmatch(name) is not None and re.search(pattern, self.data) is not None
        return self._tails[name]

    def has(self, name: str) -> bool:
        return name in self.tokens or self.is_tail(name)


@functools.lru_cache(maxsize=None)
def native_strings(path: pathlib.Path) -> NativeStrings:
    return NativeStrings(path)


@pytest.fixture(scope="module")
def real() -> NativeStrings:
    so, reason = find_native_so()
    if so is None:
        pytest.skip(f"the TensorRT bindings wheel's native tensorrt.so cannot be found: {reason}")
    return native_strings(so)


@pytest.fixture(scope="module")
def native():
    reason = standin.unavailable_reason()
    if reason is not None:
        pytest.skip(f"the TensorRT emulator cannot be loaded: {reason}")
    with standin.standin() as env:
        yield env.native


# ------------------------------------------------------------------------------------------
# what the emulated module exposes


def _public(name: str) -> bool:
    return not name.startswith("_")


def _emulator_class(cls) -> bool:
    return isinstance(cls, type) and (cls.__module__ == NATIVE or cls.__module__.startswith(NATIVE + "."))


@functools.lru_cache(maxsize=None)
def _instance_attributes(source: pathlib.Path) -> Dict[str, Set[str]]:
    """Per top-level class of ``source``: the attributes its methods assign on ``self`` (``self.x = ...``,
    ``self.a, self.b = ...``), which exist on instances without being in the class ``__dict__``."""
    out: Dict[str, Set[str]] = {}
    for node in ast.parse(source.read_text()).body:
        if not isinstance(node, ast.ClassDef):
            continue
        names = out.setdefault(node.name, set())
        for sub in ast.walk(node):
            targets = (sub.targets if isinstance(sub, ast.Assign)
                       else [sub.target] if isinstance(sub, (ast.AnnAssign, ast.AugAssign)) else [])
            for t in targets:
                for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if (isinstance(el, ast.Attribute) and isinstance(el.value, ast.Name)
                            and el.value.id == "self"):
                        names.add(el.attr)
    return out


def _members_of(cls, native) -> Set[str]:
    """Public attributes an emulated class defines: its own and its emulator-defined bases' ``__dict__``
    entries (methods, properties, slots, class attributes), the attributes their methods assign on
    instances, and for ``IBuilderConfig`` the knobs it serves through ``__getattr__``."""
    names: Set[str] = set()
    for klass in cls.__mro__:
        if not _emulator_class(klass):
            continue
        names.update(n for n in vars(klass) if _public(n))
        module = klass.__module__
        source = (EMULATOR_DIR / (module[len(NATIVE) + 1:] + ".py") if module != NATIVE
                  else EMULATOR_DIR / "__init__.py")
        if source.is_file():
            names.update(_instance_attributes(source).get(klass.__qualname__, set()))
    if cls is native.IBuilderConfig:
        names.update(native._builder._KNOBS)
    return {n for n in names if _public(n)}


def exposed_names(native) -> Dict[str, str]:
    """Every public name of the emulated module, qualified (``Class.member``, ``Enum.MEMBER``) -> the
    identifier that must exist in the real module."""
    out: Dict[str, str] = {}
    for name, obj in vars(native).items():
        if not _public(name):
            continue
        out[name] = name
        if isinstance(obj, type) and issubclass(obj, enum.Enum):
            for member in obj.__members__:
                out[f"{name}.{member}"] = member
            for klass in obj.__mro__[1:]:  # the emulator's enum bases (pybind11 enum behaviour)
                if _emulator_class(klass):
                    out.update({f"{name}.{m}": m for m in vars(klass) if _public(m)})
        elif _emulator_class(obj):
            out.update({f"{name}.{m}": m for m in _members_of(obj, native)})
    return out


def compat_qualified(native) -> Dict[str, str]:
    """``_COMPAT``'s entries by the qualified name they concern (``"ITensor.dtype (setter)"`` concerns
    ``ITensor.dtype``) -> the entry."""
    return {key.split(" ")[0]: key for key in native._COMPAT}


# ------------------------------------------------------------------------------------------
# the checks


def test_the_check_discriminates(real):
    """Negative control: names TensorRT has are found, invented ones are not (so a pass means something)."""
    for name in ("INetworkDefinition", "add_plugin_v3", "execute_async_v3", "set_input_shape", "num_io_tensors",
                 "build_serialized_network", "STRONGLY_TYPED", "get_tensor_name", "MAX_DIMS"):
        assert name in real.tokens, name
    for name in ("add_quantum_layer", "execute_async_v9", "IQuantumLayer", "build_engine_quickly",
                 "get_tensor_nam", "QUANTUM"):
        assert not real.has(name), name
    assert not any("add_quantum_layer" in run for run in real.runs)
    # a string merged into the tail of a longer one is found; the longer one holds it, followed by NUL
    assert "mark_output" not in real.tokens and real.has("mark_output") and b"unmark_output\x00" in real.data


def _missing(real, names: Dict[str, str], allowed=()) -> list:
    return sorted(q for q, token in names.items() if not real.has(token) and q not in allowed)


def test_every_emulated_name_exists_in_tensorrt(real, native):
    names = exposed_names(native)
    assert len(names) > 300, "the enumeration found too little to mean anything"
    # the enumeration sees classes, methods, properties, instance attributes and enum members
    for q in ("Builder", "Builder.build_serialized_network", "ICudaEngine.num_io_tensors",
              "IExecutionContext.execute_async_v3", "INetworkDefinition.name", "IBuilderConfig.profiling_verbosity",
              "PluginTensorDesc.dims", "DataType.BF16", "float32", "ILogger.Severity"):
        assert q in names, q
    missing = _missing(real, names, compat_qualified(native))
    assert not missing, (f"{len(missing)} name(s) of the TensorRT emulator do not exist in the real bindings "
                         f"({real.path}): {missing}. Rename each to TensorRT's name, make it the emulator's own "
                         "(leading underscore), remove it, or (Torch-TensorRT compatibility only) document it in "
                         "_COMPAT")


def test_the_check_would_catch_an_invented_name(real, native):
    """The same check over the emulator with one invented method added reports exactly that method."""

    class INetworkDefinition(native.INetworkDefinition):
        def add_quantum_layer(self, input):  # noqa: A002
            raise AssertionError("never called")

    INetworkDefinition.__module__ = native.INetworkDefinition.__module__
    fake = type(native)("fake_native")
    fake.__dict__.update({k: v for k, v in vars(native).items() if k != "INetworkDefinition"})
    fake.INetworkDefinition = INetworkDefinition
    assert _missing(real, exposed_names(fake), compat_qualified(native)) == ["INetworkDefinition.add_quantum_layer"]


def test_compat_names_are_what_they_claim(real, native):
    """``_COMPAT`` holds what Torch-TensorRT 2.11 needs and TensorRT 11.4 lacks. An entry for a whole name
    must be absent from tensorrt.so (present, it would be real and leave ``_COMPAT``); an entry for a
    behaviour of a real name (``(setter)``) names something that exists, and says it is Torch-TensorRT's."""
    compat = compat_qualified(native)
    assert compat, "_COMPAT is empty: remove this test's expectations"
    names = exposed_names(native)
    for qualified, key in compat.items():
        token = qualified.split(".")[-1]
        reason = native._COMPAT[key]
        assert "Torch-TensorRT" in reason, (key, reason)
        assert qualified in names, f"_COMPAT entry {key!r} is not a name the emulator exposes"
        if key == qualified:  # a whole name: must be absent from TensorRT 11.4
            assert not real.has(token), f"{token} exists in {real.path}: it is not a compatibility name"
            assert not any(token in run for run in real.runs), token
        else:  # a behaviour of a real name
            assert real.has(token), f"{key}: {token} is not in {real.path}"


def test_the_module_exports_only_real_names(real, native):
    """``from tensorrt.tensorrt import *`` (what NVIDIA's ``tensorrt/__init__.py`` does) exports ``__all__``:
    every entry is a public name of the emulated module and exists in TensorRT, or is in ``_COMPAT``."""
    assert set(native.__all__) <= {n for n in vars(native) if _public(n)}
    assert _missing(real, {n: n for n in native.__all__}, compat_qualified(native)) == []
