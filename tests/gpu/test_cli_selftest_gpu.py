"""trt-kernels selftest on a GPU: the seed's seven cases pass on every tier this machine has."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch

from trt_kernels import _cli_selftest as selftest
from trt_kernels import _seed_cases as sc


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
    eager = [x for x in data["results"] if x["tier"] == "eager"]
    assert len(eager) == 7 and all(x["status"] == "passed" for x in eager)


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
    assert len(rows) == 14 and all(r.status == "passed" for r in rows), [r for r in rows if r.status != "passed"]
