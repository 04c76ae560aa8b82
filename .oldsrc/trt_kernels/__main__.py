"""``python -m trt_kernels``: the ``trt-kernels`` command."""

from .cli import main

raise SystemExit(main())
