import importlib.machinery
import os
import sys
import types

import pytest
import torch

import support

HAS_CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(session, config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
    # The emulated tier switches the session's `tensorrt` to the emulator for good: run it last,
    # so no other test (the real-TensorRT tier above all) ever sees the emulator.
    items.sort(key=lambda item: "trt_emulated" in item.keywords)
    support.record_collection(session, config, items)


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory):
    """Commands that tests of several files check (the docs' commands among them), each run once per session,
    its result shared (tests/support.py, SharedRuns)."""
    return support.shared_runs(tmp_path_factory)


@pytest.fixture(autouse=True, scope="session")
def _early_jobs(request, tmp_path_factory, _isolated_cache):
    """Before the first test: the slow fresh processes that this session's tests will read, queued to run in the
    background while the tests before theirs run here (tests/support.py, early jobs and POOL)."""
    support.start_early(request.session.items, tmp_path_factory)


def pytest_runtest_logfinish(nodeid, location):
    support.POOL.pump()


def pytest_sessionfinish(session, exitstatus):
    support.POOL.stop()


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Tests compile into a private cache unless the caller chose one."""
    if "TRT_KERNELS_CACHE_DIR" not in os.environ:
        os.environ["TRT_KERNELS_CACHE_DIR"] = str(tmp_path_factory.mktemp("ttk-cache"))
    yield


@pytest.fixture
def trt_side(monkeypatch):
    """The TensorRT side on CPU (tests/trt/standin and test_redeclaration.py): NVIDIA's tensorrt.plugin over
    the emulated native module (the stand-in), and a minimal torch_tensorrt stand-in that records converters.
    Yields (the stand-in environment, {overload: (converter, its registration kwargs)})."""
    from trt_kernels import plugins, registry
    from trt_kernels.testing import _standin as standin

    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    monkeypatch.setattr(plugins, "_STATE", {})
    monkeypatch.setattr(registry, "_listeners", [])
    converters = {}

    def dynamo_tensorrt_converter(target, **kw):
        def deco(fn):
            converters[target] = (fn, kw)
            return fn
        return deco

    mods = {}
    for name in ("torch_tensorrt", "torch_tensorrt.dynamo", "torch_tensorrt.dynamo.conversion",
                 "torch_tensorrt.dynamo.conversion.converter_utils"):
        m = types.ModuleType(name)
        m.__spec__ = importlib.machinery.ModuleSpec(name, None)
        mods[name] = m
    mods["torch_tensorrt"].ENABLED_FEATURES = types.SimpleNamespace(qdp_plugin=True)
    mods["torch_tensorrt"].dynamo = mods["torch_tensorrt.dynamo"]
    mods["torch_tensorrt.dynamo"].conversion = mods["torch_tensorrt.dynamo.conversion"]
    mods["torch_tensorrt.dynamo.conversion"].dynamo_tensorrt_converter = dynamo_tensorrt_converter
    mods["torch_tensorrt.dynamo.conversion"].converter_utils = mods["torch_tensorrt.dynamo.conversion.converter_utils"]
    mods["torch_tensorrt.dynamo.conversion.converter_utils"].get_trt_tensor = lambda ctx, v, name: v
    for name, m in mods.items():
        monkeypatch.setitem(sys.modules, name, m)
    for env in standin.standin_fixture():
        yield env, converters


@pytest.fixture(scope="session")
def tt():
    """(tensorrt, torch_tensorrt) over trt_kernels.testing's emulator, for the rest of the session
    (the emulated tier's tests; conftest runs them after all others)."""
    from trt_kernels.testing import emulate_tensorrt, emulation_unavailable_reason

    reason = emulation_unavailable_reason()
    if reason is not None:
        pytest.skip(f"emulated Torch-TensorRT tier unavailable: {reason}")
    trt, torch_tensorrt = emulate_tensorrt()
    assert trt.__emulated__ and "libnvinfer emulated" in trt.__emulated__
    return trt, torch_tensorrt


@pytest.fixture(autouse=True)
def _emulated_enqueue_failures(request):
    """Emulated tier: a failed engine run fails the test that ran it. The emulator's execute_async_v3
    returns False and logs, as TensorRT's does, and Torch-TensorRT's Python runtime ignores the return
    value, so the outputs would stay unwritten (or hold an earlier run's values) with only the log to
    say why."""
    if "trt_emulated" not in request.keywords:
        yield
        return
    native = sys.modules.get("tensorrt.tensorrt")
    before = len(native._logging.RECORDS) if native is not None and hasattr(native, "_logging") else 0
    yield
    native = sys.modules.get("tensorrt.tensorrt")
    if native is None or not hasattr(native, "_logging"):
        return
    failed = [m for _, m in native._logging.RECORDS[before:] if m.startswith("IExecutionContext::enqueueV3")]
    assert not failed, f"the emulated engine failed to run (execute_async_v3 returned False): {failed}"
