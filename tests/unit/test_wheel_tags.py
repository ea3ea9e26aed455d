"""Which wheel files fit the dead process (its Python, ABI, C library, architecture), and what
pip's refusals mean."""

from __future__ import annotations

from coreanalyze.fetch.resolve import expand
from coreanalyze.fetch.target import ProcessTarget, abi_of
from coreanalyze.fetch.wheels import NETWORK_REFUSALS, abi_tags, platform_tags, wheel_file_prefix, wheel_fits

UBUNTU_2404 = ProcessTarget("3.12", "x86_64", "cp312", (2, 39))
FREE_THREADED = ProcessTarget("3.13", "x86_64", "cp313t", (2, 39))
ALPINE = ProcessTarget("3.12", "aarch64", "cp312", None, musl=True)


def test_python_and_abi():
    assert wheel_fits("numpy-2.5.2-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", UBUNTU_2404)
    assert not wheel_fits("numpy-2.5.2-cp311-cp311-manylinux_2_27_x86_64.whl", UBUNTU_2404)
    assert wheel_fits("cryptography-46.0.0-cp311-abi3-manylinux_2_34_x86_64.whl", UBUNTU_2404)
    assert not wheel_fits("cryptography-46.0.0-cp313-abi3-manylinux_2_34_x86_64.whl", UBUNTU_2404)  # newer stable ABI
    assert wheel_fits("six-1.17.0-py2.py3-none-any.whl", UBUNTU_2404)


def test_free_threaded():
    assert abi_of("3.13", ["/v/lib/python3.13t/site-packages/numpy/_core/_multiarray_umath.cpython-313t-x86_64-linux-gnu.so"]) == "cp313t"
    assert abi_of("3.13", ["/v/numpy/_core/_multiarray_umath.cpython-313-x86_64-linux-gnu.so"]) == "cp313"
    assert abi_tags(FREE_THREADED) == ["cp313t", "none"]
    assert wheel_fits("numpy-2.5.2-cp313-cp313t-manylinux_2_27_x86_64.whl", FREE_THREADED)
    assert not wheel_fits("numpy-2.5.2-cp313-cp313-manylinux_2_27_x86_64.whl", FREE_THREADED)
    assert not wheel_fits("cryptography-46.0.0-cp311-abi3-manylinux_2_34_x86_64.whl", FREE_THREADED)


def test_c_library_and_architecture():
    assert not wheel_fits("numpy-2.5.2-cp312-cp312-manylinux_2_40_x86_64.whl", UBUNTU_2404)
    assert not wheel_fits("numpy-2.5.2-cp312-cp312-manylinux_2_27_aarch64.whl", UBUNTU_2404)
    assert wheel_fits("numpy-2.5.2-cp312-cp312-musllinux_1_2_aarch64.whl", ALPINE)
    assert not wheel_fits("numpy-2.5.2-cp312-cp312-manylinux_2_27_aarch64.whl", ALPINE)
    assert platform_tags(UBUNTU_2404)[0] == "manylinux_2_39_x86_64"
    assert "manylinux_2_44_x86_64" in platform_tags("x86_64")  # glibc unknown: every level


def test_names_and_versions():
    assert expand("cupy-cuda{cuda}x", {"cuda": 13}) == "cupy-cuda13x"
    assert expand("cupy-rocm-{rocm}-{rocm_minor}", {"cuda": 13}) is None
    assert wheel_file_prefix("nvidia-cuda-nvrtc", "13.*") == "nvidia_cuda_nvrtc-13."
    assert wheel_file_prefix("ml-dtypes", "0.6.0") == "ml_dtypes-0.6.0-"


def test_network_refusals():
    assert NETWORK_REFUSALS.search(
        "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError(...: "
        "Failed to establish a new connection: [Errno 101] Network is unreachable')': /simple/numpy/"
    )
    assert NETWORK_REFUSALS.search("ERROR: HTTP error 403 while getting https://files.pythonhosted.org/...")
    assert not NETWORK_REFUSALS.search("ERROR: No matching distribution found for cupy==14.2.0")


def test_the_words_of_a_refusal():
    from coreanalyze.fetch.wheels import _refused

    stderr = (
        "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by "
        "'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f11cb6128d0>: Failed to establish "
        "a new connection: [Errno 111] Connection refused')': /simple/numpy/\n"
        "ERROR: No matching distribution found for numpy==2.5.2\n"
    )
    error = _refused(stderr)
    assert error.kind == "network"
    assert str(error) == "download refused by the network: Failed to establish a new connection: [Errno 111] Connection refused"
