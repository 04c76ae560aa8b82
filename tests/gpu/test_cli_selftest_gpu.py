"""trt-kernels selftest on a GPU: the seed's seven cases, and one case per other kernel source (ptx_op,
triton_kernel_op), pass on every tier this machine has."""

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

from trt_kernels.cli import seed_cases as sc
from trt_kernels.cli import selftest


@pytest.mark.trt_emulated  # its emulated-Torch-TensorRT column runs that tier (in a child process)
def test_selftest_command_passes_every_runnable_tier():
    r = subprocess.run([sys.executable, "-m", "trt_kernels", "selftest", "--json"], capture_output=True, text=True,
                       env=dict(os.environ), timeout=1800)
    data = json.loads(r.stdout)
    failed = [x for x in data["results"] if x["status"] == "failed"]
    assert r.returncode == 0 and data["exit_status"] == 0 and not failed, failed
    reasons = selftest.skip_reasons()
    for row in data["results"]:
        if reasons[row["tier"]] is None and row["tier"] != "tensorrt":
            assert row["status"] == "passed", row  # what can run here must run, not skip
        if row["status"] == "skipped":
            assert row["reason"], row
    eager = {x["case"]: x for x in data["results"] if x["tier"] == "eager"}
    assert len(eager) == 9 and all(x["status"] == "passed" for x in eager.values() if x["case"] != "triton_scale")
    if importlib.util.find_spec("triton") is not None:  # every kernel source ran where its compiler is installed
        assert eager["triton_scale"]["status"] == "passed", eager["triton_scale"]


def test_selftest_reports_a_wrong_result_as_failed():
    """A case whose kernel disagrees with its reference must fail, with what differed, and set the exit status."""
    wrong = dataclasses.replace(sc.CASES[0], name="sigmoid_vs_tanh", reference=torch.tanh)
    rows = selftest.selftest(cases=[wrong, sc.CASES[1]], tiers=("eager",), namespace="ttk_selftest_wrong")
    by = {r.case: r for r in rows}
    assert by["sigmoid_vs_tanh"].status == "failed" and "max abs difference" in by["sigmoid_vs_tanh"].reason
    assert by["add"].status == "passed"
    assert selftest.exit_status(rows) == 1


def test_replay_tiers_run_the_seed_cases():
    reasons = selftest.skip_reasons()
    if reasons["aot_replay"] is not None:
        pytest.skip(reasons["aot_replay"])
    rows = selftest.selftest(tiers=("aot_replay", "jit_replay"), namespace="ttk_selftest_replay")
    ran = [r for r in rows if not (r.case == "triton_scale" and importlib.util.find_spec("triton") is None)]
    assert len(rows) == 18 and all(r.status == "passed" for r in ran), [r for r in ran if r.status != "passed"]
