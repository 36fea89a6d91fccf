"""conftest.py's rule under GAMUT_REQUIRE_GPU=1: a gpu test skipped for want of a GPU fails; one that
needs more GPUs than the machine has skips (the two-GPU Dask tests on a one-GPU machine)."""
from conftest import fails_under_require_gpu


def test_no_device_skips_fail():
    for reason in ("no usable GPU: no NVIDIA GPU found", "torch has no CUDA device", "needs CUDA",
                   "Skipped: no usable GPU: CUDA driver version is insufficient"):
        assert fails_under_require_gpu(reason), reason


def test_more_devices_skips_stay_skips():
    for reason in ("Skipped: needs two CUDA devices", "needs 2 GPUs", "needs four GPUs"):
        assert not fails_under_require_gpu(reason), reason
