"""The ``trt-kernels`` command: one module per subcommand (``inspect``, ``compile``, ``doctor``, ``selftest``)
beside ``commands`` (the parser and the small ones), and the seed cases ``selftest`` runs."""

from trt_kernels.cli.commands import main

__all__ = ["main"]
