"""``ILogger`` (the interface users subclass) and ``Logger`` (the concrete one)."""

import sys
from typing import List, Tuple

from ._enums import Severity

#: every message any emulated ``Logger`` received in this process, and every message the emulator
#: reported to another logger (Torch-TensorRT's, say), oldest first: ``(severity, text)``
RECORDS: List[Tuple[Severity, str]] = []

_LETTER = {Severity.INTERNAL_ERROR: "F", Severity.ERROR: "E", Severity.WARNING: "W", Severity.INFO: "I",
           Severity.VERBOSE: "V"}


class ILogger:
    Severity = Severity

    def __init__(self, *args, **kwargs):
        pass

    def log(self, severity, msg):
        raise NotImplementedError("ILogger.log must be overridden")


class Logger(ILogger):
    """Prints messages at or above ``min_severity`` to stderr, as TensorRT's default logger does."""

    def __init__(self, min_severity=Severity.WARNING):
        super().__init__()
        self.min_severity = min_severity

    def log(self, severity, msg):
        RECORDS.append((severity, msg))
        if int(severity) <= int(self.min_severity):
            print(f"[TRT] [{_LETTER.get(severity, '?')}] {msg}", file=sys.stderr)


def report(logger, severity, msg: str) -> None:
    """Send ``msg`` to a user's logger; like TensorRT's native trampoline, an exception raised by the
    logger itself is not allowed to escape into the caller, except Torch-TensorRT's deliberate raise
    on internal errors, which TensorRT would also propagate as a failure."""
    if logger is None:
        Logger().log(severity, msg)
        return
    if not isinstance(logger, Logger):  # an emulated Logger records what it receives itself
        RECORDS.append((severity, msg))
    try:
        logger.log(severity, msg)
    except Exception:  # noqa: BLE001 - a logger's own failure must not hide the message's cause
        if severity == Severity.INTERNAL_ERROR:
            raise
        print(f"[TRT emulator] logger failed; message was: {msg}", file=sys.stderr)
