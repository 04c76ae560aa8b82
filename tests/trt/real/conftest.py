"""The real-TensorRT tier: every test under tests/trt/real is marked ``tensorrt`` and ``gpu`` here (it needs
both: without CUDA it skips as every ``gpu`` test does, see tests/conftest.py; without TensorRT the module
skips with the reason). ``python -m pytest -m tensorrt`` runs it."""

import pathlib

import pytest

from support import mark_items_under


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_items_under(pathlib.Path(__file__).parent, items, pytest.mark.tensorrt, pytest.mark.gpu)
