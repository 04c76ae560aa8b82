"""The ``trt-kernels`` command: one module per subcommand (``inspect``, ``compile``, ``doctor``, ``selftest``)
beside ``commands`` (the parser and the small ones), and the seed cases ``selftest`` runs."""


import os
import sys


def main(argv=None) -> int:
    """Run ``trt-kernels`` with ``argv`` (default: the process's arguments); its exit status. (The parser's
    module is imported here: importing the seed cases, ``trt_kernels.cli.seed_cases``, does not build it.)

    Where whoever reads the output stops reading (``trt-kernels inspect f.py | head -1``), the rest of it is
    dropped and the status is 1, without a traceback, as other command-line tools do."""
    from trt_kernels.cli.commands import main as run

    try:
        status = run(argv)
        sys.stdout.flush()  # (here, not at exit: a reader gone is then this BrokenPipeError)
        return status
    except BrokenPipeError:
        try:  # what is still buffered has nowhere to go: stdout becomes /dev/null, so exiting does not complain
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass  # (a stdout without a file descriptor: nothing buffered in one)
        return 1


__all__ = ["main"]
