"""The Triton CPU tier once more under each other Triton version CI installs.

The `triton` extra allows Triton 3.x; the registry's newest 3.x is what `pip install` picks (CI runs the
whole suite under it), and the GPU machine has 3.6. `.ci/run` installs each other version with
`pip install --no-deps --target "$TTK_EXTRA_TRITON/<version>" triton==<version>`; this test reruns the
Triton tests that run on a CPU in a fresh process with that folder first on the import path, and checks
the child really imported that version. Without ``$TTK_EXTRA_TRITON`` it skips, saying so.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXTRA_VAR = "TTK_EXTRA_TRITON"
# the CPU tests that compile Triton kernels (declarations, PTX/CUBIN, cache, ABI, plans, export, the QDP
# stand-in, the launch-time specialization against that Triton's own launcher) and the command line on a Triton
# op (inspect, compile, status, doctor)
PER_VERSION_TESTS = ["tests/unit/test_triton_cpu.py", "tests/unit/test_triton_autotune_hooks.py",
                     "tests/unit/test_triton_specialization.py", "tests/cli/test_cli_per_source.py"]
# of the command line's tests, those of the Triton op (its CUDA C++ and PTX twins do not meet Triton)
PER_VERSION_SELECT = "not test_cli_per_source or triton"


def _extra_versions():
    folder = os.environ.get(EXTRA_VAR)
    if not folder:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"${EXTRA_VAR} is not set: no other Triton version to test (.ci/run installs 3.6.0 there)"))]
    found = sorted(p for p in pathlib.Path(folder).iterdir() if (p / "triton" / "__init__.py").is_file())
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"${EXTRA_VAR}={folder} holds no Triton install"))]
    return [pytest.param(p, id=p.name) for p in found]


@pytest.mark.parametrize("install", _extra_versions())
def test_triton_cpu_tier_under_each_extra_version(install):
    env = {k: v for k, v in os.environ.items() if k != EXTRA_VAR}
    env["PYTHONPATH"] = os.pathsep.join([str(install), *filter(None, [env.get("PYTHONPATH")])])
    probe = subprocess.run([sys.executable, "-c", "import triton; print(triton.__version__); print(triton.__file__)"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-3000:]
    version, where = probe.stdout.split()
    assert version == install.name, f"{install}: the child imported triton {version}"
    assert pathlib.Path(where).is_relative_to(install), f"the child imported triton from {where}, not {install}"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "-k", PER_VERSION_SELECT,
                        *PER_VERSION_TESTS],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"under triton {version}:\n{out[-6000:]}"
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED")
               and ("test_triton_cpu" in line or "test_triton_specialization" in line)]
    assert not skipped, skipped  # Triton's tests ran, not skipped
    passed = re.search(r"(\d+) passed", out)
    assert passed and int(passed.group(1)) >= 30, out[-2000:]
