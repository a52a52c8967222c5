"""Cross-checks compare numbers with reference tools on generated, deliberately odd data.

Those data trigger deteval's input warnings (boxes past the image, classes without ground truth)
through the API on purpose; the warnings are incidental here (tests/unit/test_api.py and
tests/unit/test_bad_inputs.py check the warnings themselves), so every cross-check ignores them.
"""

import pytest

_INCIDENTAL = (
    pytest.mark.filterwarnings("ignore::deteval.errors.InputWarning"),
    pytest.mark.filterwarnings("ignore::deteval.errors.UndefinedMetricWarning"),
)


def pytest_collection_modifyitems(items: list) -> None:
    for item in items:
        if "crosscheck" in item.nodeid.split("/"):
            for mark in _INCIDENTAL:
                item.add_marker(mark)
