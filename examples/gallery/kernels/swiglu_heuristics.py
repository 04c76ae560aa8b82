"""SwiGLU's gating, out = silu(gate) * up, element by element over tensors of one shape.

Each program takes BLOCK_SIZE consecutive elements. When BLOCK_SIZE divides n_elements no block runs
past the end, so the EVEN_N heuristic, computed at launch from the sizes, compiles the loads and stores
without masks; otherwise the last block is masked. The math runs in float32, rounded once on store.
"""

import triton
import triton.language as tl


@triton.heuristics({"EVEN_N": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})
@triton.jit
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN_N: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
    offsets = start + tl.arange(0, BLOCK_SIZE)
    if EVEN_N:
        gate = tl.load(gate_ptr + offsets)
        up = tl.load(up_ptr + offsets)
    else:
        inside = offsets < n_elements
        gate = tl.load(gate_ptr + offsets, mask=inside, other=0.0)
        up = tl.load(up_ptr + offsets, mask=inside, other=0.0)
    g = gate.to(tl.float32)
    out = (g * tl.sigmoid(g) * up.to(tl.float32)).to(out_ptr.dtype.element_ty)
    if EVEN_N:
        tl.store(out_ptr + offsets, out)
    else:
        tl.store(out_ptr + offsets, out, mask=offsets < n_elements)
