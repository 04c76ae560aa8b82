"""``python -m trt_kernels``: the ``trt-kernels`` command."""

from trt_kernels.cli import main

raise SystemExit(main())
