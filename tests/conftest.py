import importlib.util
import os
import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
HAS_CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False")
    for item in items:
        if "gpu" in item.keywords and not HAS_CUDA:
            item.add_marker(skip_gpu)
    # The emulated tier switches the session's `tensorrt` to the emulator for good: run it last,
    # so no other test (the real-TensorRT tier above all) ever sees the emulator.
    items.sort(key=lambda item: "trt_emulated" in item.keywords)


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Tests compile into a private cache unless the caller chose one."""
    if "TRT_KERNELS_CACHE_DIR" not in os.environ:
        os.environ["TRT_KERNELS_CACHE_DIR"] = str(tmp_path_factory.mktemp("ttk-cache"))
    yield


def counting_compile_cache(root, monkeypatch):
    """Point the compile cache at ``root`` (enabled, empty memo) and count NVRTC compiles: returns the
    list that receives the source of every compile from now on."""
    from trt_kernels import compile as comp

    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(root))
    monkeypatch.delenv("TRT_KERNELS_CACHE", raising=False)
    comp._MEMO.clear()
    calls = []
    real = comp._nvrtc_compile

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(comp, "_nvrtc_compile", counting)
    return calls


def load_example(name: str):
    """Import examples/<name>.py once (it registers its ops on import)."""
    mod_name = f"_ttk_example_{name}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return mod


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
