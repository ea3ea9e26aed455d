"""Which packages the process had: dist-info names in memory bytes, and how imported modules
are matched to their distributions (text in, no core: the core-level tests are in
test_pywalker.py and test_tf_corpus.py)."""

from __future__ import annotations

from coreanalyze.process.imported import InMemoryDistribution, imported_packages, normalize, scan_bytes

SITE = "/srv/venv/lib/python3.11/site-packages"


def distributions(data: bytes) -> list[InMemoryDistribution]:
    found: dict[InMemoryDistribution, None] = {}
    scan_bytes(data, found)
    return list(found)


def test_names_and_paths_of_dist_info_directories():
    data = (
        b"\x00\x07\x00numpy-2.1.3.dist-info\x00\x00\xff"
        + f"{SITE}/tensorflow_cpu-2.21.0.dist-info/METADATA\x00".encode()
        + b"garbage-.dist-info not-a-version-x.dist-info"
    )
    assert distributions(data) == [
        InMemoryDistribution("numpy", "2.1.3", None),
        InMemoryDistribution("tensorflow_cpu", "2.21.0", SITE),
    ]


def test_module_versions_from_version_attribute_then_dist_info():
    imports = [
        {"name": "tensorflow", "file": f"{SITE}/tensorflow/__init__.py", "version": "2.21.0"},
        {"name": "absl", "file": f"{SITE}/absl/__init__.py", "version": None},
        {"name": "os", "file": "/usr/lib/python3.11/os.py", "version": None},
        {"name": "sys", "file": None, "version": None},
        {"name": "wrapt", "file": f"{SITE}/wrapt/__init__.py", "version": None},
    ]
    memory = [
        InMemoryDistribution("tensorflow_cpu", "2.21.0", None),
        InMemoryDistribution("absl_py", "2.1.0", SITE),
        InMemoryDistribution("absl_py", "1.0.0", "/elsewhere/site-packages"),
        InMemoryDistribution("wrapt", "1.16.0", None),
        InMemoryDistribution("wrapt", "1.17.0", None),
    ]
    got = {p.module: p for p in imported_packages(imports, memory)}
    assert set(got) == {"tensorflow", "absl", "wrapt"}  # the standard library is not a package
    assert (got["tensorflow"].name, got["tensorflow"].version, got["tensorflow"].version_from) == (
        "tensorflow-cpu", "2.21.0", "__version__")
    assert (got["absl"].name, got["absl"].version, got["absl"].version_from) == ("absl-py", "2.1.0", "dist-info")
    # Two versions in memory and nothing to choose between them: no version rather than a guess.
    assert (got["wrapt"].name, got["wrapt"].version) == ("wrapt", None)


def test_normalize():
    assert normalize("Tensorflow.CPU") == normalize("tensorflow-cpu") == "tensorflow_cpu"


def test_a_namespace_package_is_known_by_its_modules():
    # The walker gives google (a namespace package: no __file__) and, because of that, its
    # first-level modules; google.protobuf is protobuf's.
    imports = [
        {"name": "google", "file": None, "version": None},
        {"name": "google.protobuf", "file": f"{SITE}/google/protobuf/__init__.py", "version": "5.28.3"},
    ]
    (package,) = imported_packages(imports, [InMemoryDistribution("protobuf", "5.28.3", SITE)])
    assert (package.name, package.version, package.module) == ("protobuf", "5.28.3", "google.protobuf")


def test_an_accelerator_build_is_known_by_its_dist_info():
    # cupy's distribution carries the CUDA major in its name (distributions.toml: cupy-cuda{cuda}x);
    # cupy_backends, installed by the same distribution, has no __version__ of its own.
    imports = [
        {"name": "cupy", "file": f"{SITE}/cupy/__init__.py", "version": "14.2.0"},
        {"name": "cupy_backends", "file": f"{SITE}/cupy_backends/__init__.py", "version": None},
    ]
    memory = [InMemoryDistribution("cupy_cuda13x", "14.2.0", None), InMemoryDistribution("cupyx_other", "1.0", None)]
    got = {p.module: p for p in imported_packages(imports, memory)}
    assert (got["cupy"].name, got["cupy"].version, got["cupy"].version_from) == ("cupy-cuda13x", "14.2.0", "__version__")
    assert (got["cupy_backends"].name, got["cupy_backends"].version, got["cupy_backends"].version_from) == (
        "cupy-cuda13x", "14.2.0", "dist-info")
