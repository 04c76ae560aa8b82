"""Probe: per-call host cost of each piece of an eager launch (GPU machine).

Run before changing the eager path, to see what each piece costs; prints a table of medians.
Then, for the op as trt_kernels builds it (the seed's sigmoid), the whole call in grad mode
and under inference_mode, so the pieces can be compared with the total.

Run: python benchmarks/probe_launch_costs.py   (needs a CUDA GPU; without one it says so and exits 1)
"""
import argparse
import ctypes
import statistics
import struct
import sys
import time

import torch
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

from trt_kernels.sources.nvrtc import compile_program

SRC = rb"""
extern "C" __global__ void my_sigmoid(const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}
"""


def check(res):
    err = res[0]
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {err}")
    return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)


def bench(fn, n=3000, reps=7):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    meds = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        meds.append((t1 - t0) / n / 1000.0)
    return statistics.median(meds)


def main():
    rows = []
    torch.cuda.init()
    x = torch.randn(1024, device="cuda")
    print("python", sys.version.split()[0], "torch", torch.__version__, torch.cuda.get_device_name(0))
    import cuda.bindings
    print("cuda-bindings", cuda.bindings.__version__)
    print("nvrtc", nvrtc.nvrtcVersion(), "driver", cu.cuDriverGetVersion())
    major, minor = torch.cuda.get_device_capability(0)
    compiled = compile_program(SRC.decode(), ["my_sigmoid"], arch=f"sm_{major}{minor}", label="probe")
    cubin, ptx = compiled.cubin, compiled.ptx
    print("ptx version line:", [line for line in ptx.decode().splitlines() if line.startswith(".version")])
    check(cu.cuInit(0))
    lib = check(cu.cuLibraryLoadData(cubin, None, None, 0, None, None, 0))
    kern = check(cu.cuLibraryGetKernel(lib, b"my_sigmoid"))
    func = check(cu.cuKernelGetFunction(kern))
    # ptx load through the driver
    try:
        check(cu.cuModuleLoadData(ptx))
        print("PTX load ok")
    except Exception as e:
        print("PTX load failed", e)

    n = x.numel()
    y = torch.empty_like(x)
    buf = ctypes.create_string_buffer(24)
    base = ctypes.addressof(buf)
    ptrs = (ctypes.c_void_p * 3)(base, base + 8, base + 16)
    params = ctypes.addressof(ptrs)
    S = struct.Struct("=QiiQ")
    S.pack_into(buf, 0, x.data_ptr(), n, 0, y.data_ptr())
    ptrs[2] = base + 16
    stream = torch._C._cuda_getCurrentRawStream(0)
    cstream = cu.CUstream(stream)
    grid = (n + 255) // 256

    def launch_int():
        cu.cuLaunchKernel(func, grid, 1, 1, 256, 1, 1, 0, stream, params, 0)

    def launch_obj():
        cu.cuLaunchKernel(func, grid, 1, 1, 256, 1, 1, 0, cstream, params, 0)

    def launch_kern():
        cu.cuLaunchKernel(kern, grid, 1, 1, 256, 1, 1, 0, stream, params, 0)

    def launch_tuple():
        cu.cuLaunchKernel(func, grid, 1, 1, 256, 1, 1, 0, stream,
                          ((x.data_ptr(), n, y.data_ptr()), (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)), 0)

    launch_int()
    torch.cuda.synchronize()
    assert torch.allclose(y, torch.sigmoid(x), atol=1e-5), "kernel wrong"
    rows.append(("torch.sigmoid", bench(lambda: torch.sigmoid(x))))
    rows.append(("empty_like", bench(lambda: torch.empty_like(x))))
    shp = (n,)
    dev = x.device
    rows.append(("torch.empty(shape,dtype,device)", bench(lambda: torch.empty(shp, dtype=torch.float32, device=dev))))
    rows.append(("x.new_empty(shape)", bench(lambda: x.new_empty(shp))))
    rows.append(("raw stream", bench(lambda: torch._C._cuda_getCurrentRawStream(0))))
    rows.append(("current_stream().cuda_stream", bench(lambda: torch.cuda.current_stream().cuda_stream)))
    rows.append(("_cuda_getDevice", bench(lambda: torch._C._cuda_getDevice())))
    rows.append(("x.get_device()", bench(lambda: x.get_device())))
    rows.append(("x.data_ptr()", bench(lambda: x.data_ptr())))
    rows.append(("x.is_contiguous()", bench(lambda: x.is_contiguous())))
    rows.append(("x.dtype is f32", bench(lambda: x.dtype is torch.float32)))
    rows.append(("x.is_cuda", bench(lambda: x.is_cuda)))
    rows.append(("x.numel()", bench(lambda: x.numel())))
    rows.append(("x.shape", bench(lambda: x.shape)))
    # what the registered function spends choosing a launcher: the old lookup (key tuple, dict
    # get, a second Python frame) against the guard the inlined body uses now
    f32 = torch.float32
    table = {(f32, 1): lambda t: t}
    rows.append(("key tuple + dict get + call", bench(lambda: table.get((x.dtype, x.dim()))(x))))
    rows.append(("inlined guard (dtype is, dim ==)", bench(lambda: x.dtype is f32 and x.dim() == 1)))
    rows.append(("torch.is_grad_enabled()", bench(lambda: torch.is_grad_enabled())))
    rows.append(("x.requires_grad", bench(lambda: x.requires_grad)))
    scratch = ctypes.create_string_buffer(24)
    rows.append(("pack_into", bench(lambda: S.pack_into(scratch, 0, 1, 2, 0, 3))))
    rows.append(("cuLaunchKernel f, stream int", bench(launch_int)))
    rows.append(("cuLaunchKernel f, CUstream", bench(launch_obj)))
    rows.append(("cuLaunchKernel CUkernel", bench(launch_kern)))
    rows.append(("cuLaunchKernel tuple params", bench(launch_tuple)))
    # the alternative we measured and rejected: the driver's C entry point through ctypes
    # (slower than the binding on the H100: ctypes converts 11 arguments per call)
    res = cu.cuGetProcAddress(b"cuLaunchKernel", 12000, cu.CUdriverProcAddress_flags.CU_GET_PROC_ADDRESS_DEFAULT)
    raw, hfunc = None, int(func)
    if int(res[0]) == 0 and int(res[1]):
        u, v = ctypes.c_uint, ctypes.c_void_p
        raw = ctypes.CFUNCTYPE(ctypes.c_int, v, u, u, u, u, u, u, u, v, v, v)(int(res[1]))
    if raw is not None:
        def launch_raw():
            raw(hfunc, grid, 1, 1, 256, 1, 1, 0, stream, params, None)

        rows.append(("cuLaunchKernel C entry point (ctypes)", bench(launch_raw)))

    # the compiled launcher trt_kernels builds (trt_kernels/eager/_claunch.c): converts the parameters on the
    # stack and calls the same driver entry point, with no binding's argument conversion in between
    from trt_kernels.eager import compiled_launcher

    lau = compiled_launcher.prepare()
    print("compiled launcher:", lau.kind, "-", lau.reason)
    claunch, codes = (lau.launch, b"QiQ") if lau.kind == "compiled" else (None, None)
    if claunch is not None:
        xp, yp = x.data_ptr(), y.data_ptr()

        def launch_compiled():
            claunch(hfunc, grid, 1, 1, 256, 1, 1, 0, stream, codes, xp, n, yp)

        rows.append(("cuLaunchKernel via the compiled launcher", bench(launch_compiled)))

    def full(x):
        y = torch.empty_like(x)
        n = x.numel()
        S.pack_into(buf, 0, x.data_ptr(), n, 0, y.data_ptr())
        cu.cuLaunchKernel(func, (n + 255) // 256, 1, 1, 256, 1, 1, 0,
                          torch._C._cuda_getCurrentRawStream(x.get_device()), params, 0)
        return y

    rows.append(("python body (empty+pack+launch)", bench(lambda: full(x))))
    if claunch is not None:
        def full_c(x):
            y = torch.empty_like(x)
            n = x.numel()
            claunch(hfunc, (n + 255) // 256, 1, 1, 256, 1, 1, 0, torch._C._cuda_getCurrentRawStream(x.get_device()),
                    codes, x.data_ptr(), n, y.data_ptr())
            return y

        torch.testing.assert_close(full_c(x), torch.sigmoid(x), atol=1e-5, rtol=1e-5)
        rows.append(("python body (empty+compiled launch)", bench(lambda: full_c(x))))
    lib_ = torch.library.Library("probe", "FRAGMENT")
    lib_.define("sig(Tensor x) -> Tensor")
    lib_.impl("sig", full, "CUDA")
    lib_.define("noop(Tensor x) -> Tensor")
    lib_.impl("noop", lambda x: x, "CUDA")
    op = torch.ops.probe.sig.default
    noop = torch.ops.probe.noop.default
    rows.append(("Library noop .default", bench(lambda: noop(x))))
    rows.append(("Library sig .default", bench(lambda: op(x))))
    rows.append(("Library sig packet", bench(lambda: torch.ops.probe.sig(x))))

    @torch.library.custom_op("probe::sig2", mutates_args=(), device_types="cuda")
    def sig2(x: torch.Tensor) -> torch.Tensor:
        return full(x)

    op2 = torch.ops.probe.sig2.default
    rows.append(("custom_op sig .default", bench(lambda: op2(x))))
    with torch.inference_mode():
        xi = torch.randn(1024, device="cuda")
        rows.append(("[inf] torch.sigmoid", bench(lambda: torch.sigmoid(xi))))
        rows.append(("[inf] Library sig .default", bench(lambda: op(xi))))
        rows.append(("[inf] custom_op sig .default", bench(lambda: op2(xi))))
        rows.append(("[inf] empty_like", bench(lambda: torch.empty_like(xi))))
    xg = torch.randn(1024, device="cuda", requires_grad=True)
    rows.append(("[grad input] torch.sigmoid", bench(lambda: torch.sigmoid(xg))))
    try:
        import cupy
        ck = cupy.RawKernel(SRC.decode(), "my_sigmoid")
        cx = cupy.asarray(x)
        cy = cupy.empty_like(cx)
        rows.append(("cupy RawKernel call", bench(lambda: ck((grid,), (256,), (cx, cupy.int32(n), cy)))))
    except Exception as e:  # noqa: BLE001
        print("cupy failed", e)

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    import seed_specs

    seed_specs.declare(ns="probe_seed")
    ours = torch.ops.probe_seed.sigmoid
    ours(x)
    rows.append(("trt_kernels sigmoid op(x)", bench(lambda: ours(x))))
    rows.append(("trt_kernels sigmoid .default(x)", bench(lambda: ours.default(x))))
    with torch.inference_mode():
        xi = torch.randn(1024, device="cuda")
        rows.append(("[inf] trt_kernels sigmoid op(x)", bench(lambda: ours(xi))))
        rows.append(("[inf] trt_kernels sigmoid .default(x)", bench(lambda: ours.default(xi))))
    print(f"| {'piece':40s} | {'median us':>10s} |")
    print(f"| {'-' * 40} | {'-' * 10} |")
    for name, v in rows:
        print(f"| {name:40s} | {v:10.2f} |")


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/probe_launch_costs.py: needs a CUDA GPU (torch.cuda.is_available() is False)")
    main()
