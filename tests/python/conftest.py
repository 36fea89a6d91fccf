"""pytest set-up for the gamut Python package: the examples folder, and GPU tests (marked gpu) that
skip cleanly on a machine without a CUDA device or driver.

They fail instead of skipping
- when GAMUT_REQUIRE_GPU=1 (set by the device scripts, tools/device_run.sh): there a gpu test that
  skips for want of a GPU (no device, or "torch has no CUDA device") is a failure; one that needs
  more GPUs than there are still skips;
- on a CUDA error of a machine that has a driver (a driver older than the runtime, out of memory,
  an exclusive or busy device): the reason says which.
"""
import os
import re

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")

# The reasons of the library's probe (src/cuda/runtime/device.cpp) that mean "nothing to run on".
ABSENT = ("no NVIDIA GPU found", "built without CUDA")
# A skip of a gpu test for want of a device, in the tests' own words; one that wants more devices
# than the machine has ("needs two CUDA devices") is a skip there too.
NO_DEVICE_SKIP = re.compile(r"\b(GPU|CUDA|device)\b", re.IGNORECASE)
MORE_DEVICES_SKIP = re.compile(r"\bneeds (two|three|four|several|\d+)\b", re.IGNORECASE)


def fails_under_require_gpu(reason):
    """True where a gpu test's skip reason means no usable device (GAMUT_REQUIRE_GPU=1 fails it)."""
    return bool(NO_DEVICE_SKIP.search(reason)) and not MORE_DEVICES_SKIP.search(reason)


def gpu_required():
    return os.environ.get("GAMUT_REQUIRE_GPU", "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped without one, failed under "
                                       "GAMUT_REQUIRE_GPU=1)")
    config.addinivalue_line("markers", "gpu_unavailable(reason): set by this file: the gpu test fails")


def pytest_collection_modifyitems(config, items):
    import gamut
    if gamut.gpu_available():
        return
    why = gamut.gpu_unavailable_reason()
    if gpu_required():
        mark = pytest.mark.gpu_unavailable(reason=f"GAMUT_REQUIRE_GPU=1 but no usable GPU: {why}")
    elif not any(a in why for a in ABSENT):
        mark = pytest.mark.gpu_unavailable(reason=f"the GPU cannot be used: {why}")
    else:
        mark = pytest.mark.skip(reason=f"no usable GPU: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(mark)


def pytest_runtest_setup(item):
    m = item.get_closest_marker("gpu_unavailable")
    if m is not None:
        pytest.fail(m.kwargs["reason"], pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under GAMUT_REQUIRE_GPU=1, a gpu test that skips for want of a device fails."""
    outcome = yield
    rep = outcome.get_result()
    if not (gpu_required() and rep.skipped and "gpu" in item.keywords):
        return
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    if fails_under_require_gpu(reason):
        rep.outcome = "failed"
        rep.longrepr = f"GAMUT_REQUIRE_GPU=1: a gpu test skipped: {reason}"


@pytest.fixture(scope="session")
def examples():
    return EXAMPLES
