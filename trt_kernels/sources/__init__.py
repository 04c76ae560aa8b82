"""Where a kernel's code comes from: the :class:`~trt_kernels.sources.kernel_source.KernelSource` protocol and
its three implementations, each with its compiler.

``cuda_source`` (CUDA C++, compiled by ``nvrtc``), ``ptx_source`` (PTX as written), ``triton_source`` (a
``@triton.jit`` function, compiled by ``triton_compile``). ``toolchain`` finds NVRTC and the CUDA headers
without loading them; ``ptxcheck`` knows which PTX a driver accepts; ``abi`` compares what the spec says a
kernel takes with what its PTX says.
"""
