"""The GPU tier: every test under tests/gpu is marked ``gpu`` here, and skips without CUDA
(tests/conftest.py). ``python -m pytest -m gpu`` runs it (with the few ``gpu`` tests elsewhere)."""

import pathlib

import pytest

from support import mark_items_under


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_items_under(pathlib.Path(__file__).parent, items, pytest.mark.gpu)
