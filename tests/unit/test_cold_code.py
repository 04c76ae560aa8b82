"""benchmarks/cold_code.py's copy of the package: a function a warm start did not call loses its body, one it
called keeps it (and the functions nested in it are judged in turn), so the copy loads the same names with less
bytecode. (Its timing run is the benchmark's, not a test.)"""

import importlib.util

import pytest

from support import ROOT

_spec = importlib.util.spec_from_file_location("_ttk_cold_code", ROOT / "benchmarks" / "cold_code.py")
cold_code = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cold_code)

SOURCE = '''\
import functools


def hot(x):
    def inner_hot(y):
        return y + 1

    def inner_cold(y):
        return y - 1

    return inner_hot(x) * 2


def cold(x):
    total = 0
    for i in range(x):
        total += i * i - x // (i + 1)
    return f"{total} from {x} in {x} steps"


@functools.lru_cache(maxsize=None)
def decorated_hot(x):
    return x + 10


class K:
    def used(self):
        return 5

    def unused(self):
        return {"a": [1, 2, 3], "b": sorted(range(10), key=lambda v: -v)}
'''


def _called(path):
    # (file, first line, name) as the recording child collects them: a decorated function's first line is its
    # decorator's
    return frozenset({(path, 4, "hot"), (path, 5, "inner_hot"), (path, 21, "decorated_hot"), (path, 27, "used")})


def test_uncalled_bodies_are_replaced_and_called_ones_kept():
    path = "/somewhere/mod.py"
    text, replaced = cold_code.strip_source(SOURCE, path, _called(path))
    assert replaced == 3  # inner_cold, cold, K.unused
    ns = {}
    exec(compile(text, path, "exec"), ns)
    assert ns["hot"](1) == 4 and ns["decorated_hot"](1) == 11 and ns["K"]().used() == 5
    for call in (lambda: ns["cold"](1), lambda: ns["K"]().unused()):
        with pytest.raises(NotImplementedError):
            call()
    assert cold_code.bytecode_size_of(text) < cold_code.bytecode_size_of(SOURCE)


def test_a_function_of_another_file_is_not_taken_for_one_called():
    text, replaced = cold_code.strip_source(SOURCE, "/elsewhere/mod.py", _called("/somewhere/mod.py"))
    assert replaced == 5  # every top-level function and method: none ran (hot's nested ones go with its body)
    ns = {}
    exec(compile(text, "/elsewhere/mod.py", "exec"), ns)
    with pytest.raises(NotImplementedError):
        ns["hot"](1)
