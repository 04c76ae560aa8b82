"""The emulated tier: real Torch-TensorRT over trt_kernels.testing's emulated libnvinfer. Every test under
tests/trt/emulated is marked ``trt_emulated`` here; tests/conftest.py runs them after all others, and its
``tt`` fixture skips them, with the reason, where the tier cannot run (no GPU, no torch-tensorrt).
``python -m pytest -m trt_emulated`` runs it."""

import pathlib

import pytest

from support import mark_items_under


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_items_under(pathlib.Path(__file__).parent, items, pytest.mark.trt_emulated)
