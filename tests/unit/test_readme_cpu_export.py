"""The README's CPU-only export example (Quickstart, the block after ``<!-- readme: cpu-export``) runs as
written on a machine without a GPU: the block is read from README.md, so the two cannot drift.

It continues the Quickstart block (``torch``, ``Model`` and the ``my_kernels::sigmoid`` op come from
there); that block's declaration part runs first, up to its first CUDA line (``x = torch.randn(...,
device="cuda")``)."""

import re

import torch

from support import ROOT

MARKER = "<!-- readme: cpu-export"


def _python_block_after(text: str, start: int) -> str:
    m = re.compile(r"```python\n(.*?)```", re.S).search(text, start)
    assert m is not None, f"no ```python block after offset {start} of README.md"
    return m.group(1)


def test_readme_cpu_export_block_runs_without_a_gpu():
    readme = (ROOT / "README.md").read_text()
    assert readme.count(MARKER) == 1, f"README.md should mark one block with {MARKER!r}"
    quick = _python_block_after(readme, readme.index("## Quickstart"))
    cuda_line = 'x = torch.randn(4, 1000, device="cuda")'
    assert cuda_line in quick, "the Quickstart block changed: update this test's split point"
    declare = quick[:quick.index(cuda_line)]
    block = _python_block_after(readme, readme.index(MARKER))
    assert 2 <= len(block.strip().splitlines()) <= 3 and 'device="meta"' in block, block

    ns = {}
    exec(compile(declare, "README.md (Quickstart)", "exec"), ns)  # noqa: S102 - the README's own code
    exec(compile(block, "README.md (cpu-export)", "exec"), ns)  # noqa: S102
    ep = ns["ep"]
    assert isinstance(ep, torch.export.ExportedProgram)
    calls = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert calls == [torch.ops.my_kernels.sigmoid.default]
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    assert tuple(out.meta["val"].shape) == (4, 1000) and out.meta["val"].dtype == torch.float32
