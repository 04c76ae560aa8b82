"""The TensorRT emulator never invents an API (issue 8, item 3), and models the TensorRT version it runs
under (issue 16): every class, method, property, attribute and enum member that the emulated native
module ``tensorrt.tensorrt`` exposes exists in the bindings of the version it emulates, checked against
the identifiers in that wheel's native ``tensorrt.so`` (pybind11 keeps its class, method, property and
enum member names, and its docstrings, as plain strings). The wheel is the one the emulator runs under:
``$TRT_STANDIN_BINDINGS`` (a ``.whl`` or an unzipped one) or else the installed
``tensorrt-cu13-bindings``; the ``.so`` is always that wheel's, never another's. Names beginning with
``_`` are the emulator's own. CPU only: the ``.so`` is read as bytes, never loaded (it needs libnvinfer).

Per line: under 10.15 the emulator has TensorRT 10.15's names (``IAlgorithmSelector``, the ``ITensor.dtype``
setter, ``BuilderFlag.FP16``, ``NetworkDefinitionCreationFlag.EXPLICIT_BATCH``) and refuses 11.0's by
name; under 11.x the reverse. ``_version.ONLY_10_15`` / ``ONLY_11`` (the names one line has and the other
lacks) are checked against the wheel too. ``test_each_extra_wheel`` runs these checks (and the stand-in
tests) once more for each wheel in the folder ``$TTK_EXTRA_BINDINGS`` (CI: 10.15.1.29 besides the pinned
11.0.0.114), each in a fresh process, since the emulator is process-global.

What it cannot see: the check is per identifier, not per class, so a real name put on the wrong class
passes (``Weights.count`` did: ``count`` is only an argument of TensorRT's ``Weights`` constructor); and
methods an emulated class inherits from a builtin base (``Dims`` is a ``list``, ``IHostMemory`` a
``bytes``) are not enumerated."""

import ast
import enum
import functools
import os
import pathlib
import re
import subprocess
import sys
import zipfile
from typing import Dict, List, Optional, Set, Tuple

import pytest

import trt_kernels.testing as testing
from trt_kernels.testing import _standin as standin

ROOT = pathlib.Path(__file__).resolve().parents[3]
EMULATOR_DIR = pathlib.Path(testing.__file__).resolve().parent / "trt_emulator"
NATIVE = "tensorrt.tensorrt"  # the module name the emulator is loaded under
#: a folder of further bindings wheels (``tensorrt_cu13_bindings-*.whl``) to run the checks under
EXTRA_VAR = "TTK_EXTRA_BINDINGS"
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e\t\n]{2,}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SO_MEMBER = re.compile(r"^tensorrt_bindings/tensorrt[^/]*\.so$")


def find_native_so() -> Tuple[Optional[Tuple[str, bytes]], str]:
    """The native module of the bindings the emulator runs under, located without importing
    ``tensorrt_bindings`` (whose ``__init__`` would load libnvinfer): ``((where, bytes), "")`` or
    ``(None, why not)``. A ``.whl`` named by ``$TRT_STANDIN_BINDINGS`` is read in place."""
    boot = testing.bootstrap()
    override = os.environ.get(boot.ENV_VAR)
    if override and pathlib.Path(override).is_file() and override.endswith(".whl"):
        with zipfile.ZipFile(override) as zf:
            for member in sorted(zf.namelist()):
                if _SO_MEMBER.match(member):
                    return (f"{override}!{member}", zf.read(member)), ""
        return None, f"{override} holds no tensorrt_bindings/tensorrt*.so"
    found, reason = boot.find_bindings_dir()
    if found is None:
        return None, reason
    for so in sorted(found.glob("tensorrt*.so")):
        if so.is_file():
            return (str(so), so.read_bytes()), ""
    return None, f"no tensorrt*.so in {found} (the wheel's native module, beside the __init__.py the emulator runs)"


class NativeStrings:
    """What ``strings`` shows of a native module: the runs of printable ASCII (docstrings, dotted names
    and mangled symbols kept whole) and the identifier tokens in them.

    :meth:`has` is the check. A name exists when it is a whole token of a run, or when it is the tail of
    a NUL-terminated string: the linker merges string constants that are suffixes of others, so
    pybind11's ``"mark_output"`` is stored once, as the end of ``"unmark_output\\0"``, and TensorRT's
    ``"INPUT"`` as the end of ``"CONDITIONAL_INPUT\\0"``. (So a real name's suffix also passes, as it
    would be a valid C string of the binary; an invented name does not.)"""

    def __init__(self, path: str, data: bytes):
        self.path = path
        self.data = data
        self.runs = tuple(m.group().decode("ascii") for m in _PRINTABLE_RUN.finditer(self.data))
        tokens = set()
        for run in self.runs:
            tokens.update(_IDENTIFIER.findall(run))
        self.tokens = frozenset(tokens)
        self._tails: Dict[str, bool] = {}

    @property
    def nvinfer_major(self) -> Optional[int]:
        """The major version of the libnvinfer this module links (``libnvinfer.so.10``)."""
        m = re.search(rb"libnvinfer\.so\.(\d+)\x00", self.data)
        return int(m.group(1)) if m else None

    def is_tail(self, name: str) -> bool:
        """``name`` ends a NUL-terminated string of identifier characters (``...name\\0``)."""
        if name not in self._tails:
            pattern = rb"[A-Za-z0-9_]" + re.escape(name.encode("ascii")) + rb"\x00"
            self._tails[name] = _IDENTIFIER.fullmatch(name) is not None and re.search(pattern, self.data) is not None
        return self._tails[name]

    def has(self, name: str) -> bool:
        return name in self.tokens or self.is_tail(name)


@functools.lru_cache(maxsize=None)
def native_strings(path: str, data: bytes) -> NativeStrings:
    return NativeStrings(path, data)


@pytest.fixture(scope="module")
def real() -> NativeStrings:
    found, reason = find_native_so()
    if found is None:
        pytest.skip(f"the TensorRT bindings wheel's native tensorrt.so cannot be found: {reason}")
    return native_strings(*found)


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


def _token(qualified: str) -> str:
    return qualified.rpartition(".")[2]


def _line_tables(native):
    """``(this line's own names, the other line's names)`` from the emulator's ``_version``."""
    v = native._version
    return (v.ONLY_10_15, v.ONLY_11) if v.PROFILE == "10.15" else (v.ONLY_11, v.ONLY_10_15)


#: names that per line must be (or must not be) exposed by the emulator: what Torch-TensorRT 2.11 (TensorRT
#: 10.15's partner) touches, and the flag enums whose members differ
EXPECTED = {
    "10.15": {"IAlgorithmSelector", "ITensor.dtype", "BuilderFlag.FP16", "BuilderFlag.BF16", "BuilderFlag.WEIGHTLESS",
              "NetworkDefinitionCreationFlag.EXPLICIT_BATCH", "NetworkDefinitionCreationFlag.STRONGLY_TYPED"},
    "11": {"ITensor.dtype", "NetworkDefinitionCreationFlag.STRONGLY_TYPED", "BuilderFlag.STRIP_PLAN"},
}

#: the other line's names whose identifier still occurs in this line's tensorrt.so (in a docstring, or as a
#: member of another class: ``DataType.FP16``), so that their absence cannot be read from the strings
SHARED_TOKENS = {
    "10.15": {"ILayer.num_ranks"},
    "11": {"BuilderFlag.FP16", "BuilderFlag.INT8", "BuilderFlag.BF16", "BuilderFlag.FP8", "BuilderFlag.INT4",
           "BuilderFlag.FP4", "ICudaEngine.device_memory_size", "ICudaEngine.get_device_memory_size_for_profile",
           "ICudaEngine.has_implicit_batch_dimension", "ILayer.precision", "IPluginRegistry.plugin_creator_list"},
}


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


def test_the_emulator_runs_under_the_wheel_whose_names_are_checked(real, native):
    """The ``.so`` checked is the one of the bindings the emulator was bootstrapped from: same major line
    (the libnvinfer it links) as the version the emulator models, and that version is the wheel's."""
    v = native._version
    found, _ = testing.bootstrap().find_bindings_dir()
    assert v.VERSION == testing.bootstrap().bindings_version(found)
    assert v.PROFILE in ("10.15", "11"), v.VERSION
    assert real.nvinfer_major == v.MAJOR_MINOR[0], (real.path, real.nvinfer_major, v.VERSION)


def _missing(real, names: Dict[str, str]) -> list:
    return sorted(q for q, token in names.items() if not real.has(token))


def test_every_emulated_name_exists_in_tensorrt(real, native):
    names = exposed_names(native)
    assert len(names) > 300, "the enumeration found too little to mean anything"
    # the enumeration sees classes, methods, properties, instance attributes and enum members
    for q in ("Builder", "Builder.build_serialized_network", "ICudaEngine.num_io_tensors",
              "IExecutionContext.execute_async_v3", "INetworkDefinition.name", "IBuilderConfig.profiling_verbosity",
              "PluginTensorDesc.dims", "DataType.BF16", "float32", "ILogger.Severity"):
        assert q in names, q
    missing = _missing(real, names)
    assert not missing, (f"{len(missing)} name(s) of the TensorRT emulator (emulating {native._version.VERSION}) "
                         f"do not exist in the real bindings ({real.path}): {missing}. Rename each to TensorRT's "
                         "name, make it the emulator's own (leading underscore), expose it only under the line that "
                         "has it (_version.ONLY_10_15 / ONLY_11), or remove it")


def test_the_emulator_exposes_its_lines_names_and_not_the_others(native):
    """Per line: what Torch-TensorRT's partner version needs is there; no name of the other line is."""
    names = exposed_names(native)
    own, other = _line_tables(native)
    profile = native._version.PROFILE
    assert EXPECTED[profile] <= set(names), sorted(EXPECTED[profile] - set(names))
    assert not set(names) & other, (f"exposed though TensorRT {native._version.VERSION} lacks them: "
                                    f"{sorted(set(names) & other)}")
    flags = {m: int(f) for m, f in native.NetworkDefinitionCreationFlag.__members__.items()}
    if profile == "10.15":  # NvInfer.h of 10.15
        assert flags == {"EXPLICIT_BATCH": 0, "STRONGLY_TYPED": 1, "PREFER_JIT_PYTHON_PLUGINS": 2,
                         "PREFER_AOT_PYTHON_PLUGINS": 3}
        assert (int(native.BuilderFlag.FP16), int(native.BuilderFlag.VERSION_COMPATIBLE),
                int(native.BuilderFlag.STRIP_PLAN),
                int(native.BuilderFlag.DISTRIBUTIVE_INDEPENDENCE)) == (0, 13, 19, 28)
        assert native.BuilderFlag.STRIP_PLAN is native.BuilderFlag.WEIGHTLESS  # one value, bound first as WEIGHTLESS
        assert "IAlgorithmSelector" in native.__all__
    else:
        assert flags == {"STRONGLY_TYPED": 0, "PREFER_JIT_PYTHON_PLUGINS": 1, "PREFER_AOT_PYTHON_PLUGINS": 2}
        assert (int(native.BuilderFlag.VERSION_COMPATIBLE), int(native.BuilderFlag.STRIP_PLAN),
                int(native.BuilderFlag.DISTRIBUTIVE_INDEPENDENCE)) == (12, 18, 27)
        assert "IAlgorithmSelector" not in native.__all__
    assert native.ITensor.dtype.fset is None if profile == "11" else native.ITensor.dtype.fset is not None


def test_the_version_tables_hold_for_this_wheel(real, native):
    """``_version.ONLY_10_15`` / ``ONLY_11``: each of the emulated line's own names exists in its ``tensorrt.so``;
    each of the other line's is absent from it, except the few whose identifier occurs there for another
    reason (``SHARED_TOKENS``, kept exact so the exception cannot grow silently)."""
    own, other = _line_tables(native)
    profile = native._version.PROFILE
    assert sorted(q for q in own if not real.has(_token(q))) == []
    present = {q for q in other if real.has(_token(q))}
    assert present == SHARED_TOKENS[profile], (sorted(present - SHARED_TOKENS[profile]),
                                               sorted(SHARED_TOKENS[profile] - present))
    assert len(other - present) >= 10  # most of the table is checked, not excused


def test_a_name_the_version_lacks_is_refused_by_name(native):
    """The other line's names fail naming the version (module, enum and class attributes alike); names real
    TensorRT has but the emulator leaves out fail saying the emulator lacks them."""
    import tensorrt as trt  # the stand-in, active in the ``native`` fixture

    v = native._version
    version = v.VERSION
    if v.PROFILE == "11":
        cases = [(lambda: trt.IAlgorithmSelector, "tensorrt.IAlgorithmSelector"),
                 (lambda: native.IAlgorithmSelector, "tensorrt.IAlgorithmSelector"),
                 (lambda: trt.BuilderFlag.FP16, "tensorrt.BuilderFlag.FP16"),
                 (lambda: trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH,
                  "tensorrt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH"),
                 (lambda: trt.Builder(trt.Logger()).platform_has_fast_fp16, "tensorrt.Builder.platform_has_fast_fp16"),
                 (lambda: setattr(trt.Builder(trt.Logger()).create_builder_config(), "algorithm_selector", None),
                  "tensorrt.IBuilderConfig.algorithm_selector"),
                 (lambda: trt.Builder(trt.Logger()).create_network(0).add_input("x", trt.float32, (1,)).dynamic_range,
                  "tensorrt.ITensor.dynamic_range")]
        why = "removed in 11.0"
    else:
        net = trt.Builder(trt.Logger()).create_network(0)
        layer = net.add_identity(net.add_input("x", trt.float32, (1,)))
        cases = [(lambda: trt.IMoELayer, "tensorrt.IMoELayer"),
                 (lambda: native.CollectiveOperation, "tensorrt.CollectiveOperation"),
                 (lambda: net.add_dist_collective, "tensorrt.INetworkDefinition.add_dist_collective"),
                 (lambda: layer.num_ranks, "tensorrt.IIdentityLayer.num_ranks")]  # an ILayer member, found via the base
        why = "added in 11.0"
    for get, qualified in cases:
        with pytest.raises(AttributeError) as info:
            get()
        assert str(info.value) == f"{qualified} does not exist in TensorRT {version} ({why})"
    for get, qualified in [(lambda: trt.IResizeLayer, "tensorrt.IResizeLayer"),
                           (lambda: trt.Builder(trt.Logger()).create_network(0).add_resize,
                            "tensorrt.INetworkDefinition.add_resize"),
                           (lambda: trt.LayerType.RESIZE, "tensorrt.LayerType.RESIZE")]:
        with pytest.raises(AttributeError, match=re.escape(f"{qualified} is not implemented by the TensorRT emulator")):
            get()
    assert not hasattr(trt.BuilderFlag, "NO_SUCH_FLAG") and not hasattr(trt, "tensorrt_rtx")


def test_the_check_would_catch_an_invented_name(real, native):
    """The same check over the emulator with one invented method added reports exactly that method."""

    class INetworkDefinition(native.INetworkDefinition):
        def add_quantum_layer(self, input):  # noqa: A002
            raise AssertionError("never called")

    INetworkDefinition.__module__ = native.INetworkDefinition.__module__
    fake = type(native)("fake_native")
    fake.__dict__.update({k: v for k, v in vars(native).items() if k != "INetworkDefinition"})
    fake.INetworkDefinition = INetworkDefinition
    assert _missing(real, exposed_names(fake)) == ["INetworkDefinition.add_quantum_layer"]


def test_the_check_would_catch_a_name_of_the_other_line(real, native):
    """Negative control for the per-line check: the other line's most distinctive name, exposed, is caught by
    the ``tensorrt.so`` check (absent from this wheel) and by the table check."""
    own, other = _line_tables(native)
    name = "IAlgorithmSelector" if native._version.PROFILE == "11" else "IMoELayer"
    assert name in other and not real.has(name) and not any(name in run for run in real.runs)


def test_the_module_exports_only_real_names(real, native):
    """``from tensorrt.tensorrt import *`` (what NVIDIA's ``tensorrt/__init__.py`` does) exports ``__all__``:
    every entry is a public name of the emulated module and exists in TensorRT."""
    assert set(native.__all__) <= {n for n in vars(native) if _public(n)}
    assert _missing(real, {n: n for n in native.__all__}) == []


# ------------------------------------------------------------------------------------------
# every wheel: the same checks (and the stand-in tests) in a fresh process per extra wheel

#: run under each extra wheel: names, NVIDIA-layer facts, the emulator, our plugins through NVIDIA's layer
PER_WHEEL_TESTS = ("tests/trt/emulator/test_trt_emulator_names.py", "tests/trt/standin/test_trt_standin.py",
                   "tests/trt/emulator/test_trt_emulator.py", "tests/trt/standin/test_plugins_standin.py")


def extra_wheels() -> List[pathlib.Path]:
    folder = os.environ.get(EXTRA_VAR)
    if not folder:
        return []
    return sorted(pathlib.Path(folder).glob("tensorrt_cu13_bindings-*.whl"))


def _wheel_version(whl: pathlib.Path) -> str:
    return whl.name.split("-")[1]


def _params():
    wheels = extra_wheels()
    if wheels:
        return [pytest.param(w, id=_wheel_version(w)) for w in wheels]
    why = (f"${EXTRA_VAR} is not set" if not os.environ.get(EXTRA_VAR)
           else f"${EXTRA_VAR}={os.environ[EXTRA_VAR]} holds no tensorrt_cu13_bindings-*.whl")
    return [pytest.param(None, id="none", marks=pytest.mark.skip(
        reason=f"no extra bindings wheels ({why}; .ci/run downloads 10.15.1.29 there): only the selected wheel "
               "was checked"))]


@pytest.mark.parametrize("wheel", _params())
def test_each_extra_wheel(wheel):
    """Each wheel in ``$TTK_EXTRA_BINDINGS``: the emulator bootstrapped from it models its version, and the
    name checks, the NVIDIA-layer facts, the emulator's tests and our plugins pass under it."""
    boot = testing.bootstrap()
    version = _wheel_version(wheel)
    assert boot.modeled(version), f"{wheel.name}: the emulator does not model TensorRT {version}"
    env = {k: v for k, v in os.environ.items() if k != EXTRA_VAR}
    env[boot.ENV_VAR] = str(wheel)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-k", "not test_each_extra_wheel",
           *PER_WHEEL_TESTS]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"under {wheel.name}:\n{out[-6000:]}"
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED") and "test_trt_emulator_names" in line]
    assert not skipped, skipped  # the names were checked, not skipped
    assert re.search(r"\d+ passed", out), out[-2000:]
