"""``trt_kernels.testing``'s public names are what the README says they are, whatever was imported
before (issue 15, item 15: ``standin`` used to become the submodule after first access)."""

import importlib
import inspect
import subprocess
import sys

import trt_kernels.testing as testing

FUNCTIONS = ["standin", "standin_fixture", "unavailable_reason", "aot_replay", "jit_replay", "emulate_tensorrt",
             "emulation_unavailable_reason", "pure_torch_tensorrt", "fresh_process_env", "force_tactic",
             "save_compiled", "load_compiled", "is_emulated", "bootstrap"]
CLASSES = ["Standin", "BuildResult", "ReplayResult"]


def test_public_names_are_functions_and_classes():
    for _ in range(2):  # the first access imports the implementation module; the second must not see it
        for name in FUNCTIONS:
            assert inspect.isfunction(getattr(testing, name)), name
    for name in CLASSES:
        assert inspect.isclass(getattr(testing, name)), name
    assert sorted(testing.__all__) == sorted(FUNCTIONS + CLASSES + ["SHIM_PATH"])


def test_names_survive_importing_every_submodule():
    """Importing the implementation modules (as other code does) must not rebind the public names."""
    for mod in ("_standin", "_replay", "_emulated"):
        importlib.import_module(f"trt_kernels.testing.{mod}")
    for name in FUNCTIONS:
        assert inspect.isfunction(getattr(testing, name)), name


def test_fresh_process_standin_is_callable_after_submodule_use():
    code = ("import trt_kernels.testing as t, trt_kernels.testing._replay; "
            "from trt_kernels.testing import aot_replay; import inspect; "
            "assert inspect.isfunction(t.standin), type(t.standin); "
            "assert inspect.isfunction(t.aot_replay); print('ok')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
