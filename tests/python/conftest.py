"""pytest set-up for the gamut Python package: the examples folder, and GPU tests that skip
cleanly on a machine without a usable CUDA device."""
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one)")


def pytest_collection_modifyitems(config, items):
    import gamut
    if gamut.gpu_available():
        return
    skip = pytest.mark.skip(reason=f"no usable GPU: {gamut.gpu_unavailable_reason()}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def examples():
    return EXAMPLES
