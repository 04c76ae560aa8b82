"""The torch side of an op, one concern per module (as ``torch/_library`` splits it): ``schema`` (derive,
check, parse), ``arguments`` (a call's checks), ``fake`` (meta and CPU kernels), ``autograd``, and
``definition`` (the ``torch.library`` definition and its lifecycle). The eager CUDA kernel is
:mod:`trt_kernels.eager.cuda_kernel`."""
