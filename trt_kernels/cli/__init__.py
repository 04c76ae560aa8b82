"""The ``trt-kernels`` command: one module per subcommand (``inspect``, ``compile``, ``doctor``, ``selftest``)
beside ``commands`` (the parser and the small ones), and the seed cases ``selftest`` runs."""


def main(argv=None) -> int:
    """Run ``trt-kernels`` with ``argv`` (default: the process's arguments); its exit status. (The parser's
    module is imported here: importing the seed cases, ``trt_kernels.cli.seed_cases``, does not build it.)"""
    from trt_kernels.cli.commands import main as run

    return run(argv)


__all__ = ["main"]
