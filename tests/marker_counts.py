"""A pytest plugin for tests/unit/test_docs.py: one ``--collect-only`` run writes each collected test's markers
to the file named by ``TTK_MARKER_COUNTS`` (one line per test: its markers, comma-separated), so the docs'
``python -m pytest -m NAME`` commands are checked from one collection instead of one each."""

import os


def pytest_collection_modifyitems(config, items):
    path = os.environ.get("TTK_MARKER_COUNTS")
    if not path:
        return
    with open(path, "w") as f:
        for item in items:
            f.write(",".join(sorted({m.name for m in item.iter_markers()})) + "\n")
