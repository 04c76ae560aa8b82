"""``python -m trt_kernels.cli``: the ``trt-kernels`` command (as ``python -m trt_kernels``)."""

from trt_kernels.cli import main

raise SystemExit(main())
