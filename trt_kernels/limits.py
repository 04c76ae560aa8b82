"""CUDA's launch limits and the C integer ranges the kernel ABI uses: one table, read by
validation (spec), the plan, the eager fast path and the TensorRT side."""

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
GRID_LIMITS = (2**31 - 1, 65535, 65535)  # grid x, y, z
BLOCK_LIMITS = (1024, 1024, 64)  # block x, y, z
MAX_THREADS_PER_BLOCK = 1024
STATIC_SHARED_MEM = 49152  # dynamic shared memory a launch may use without cuFuncSetAttribute's opt-in
MAX_SHARED_MEM = 232448  # dynamic shared memory no current NVIDIA GPU exceeds (227 KiB, sm_90/sm_100)
