"""Which distributions and versions --fetch tries for a library, from the evidence a core gives
(the rules in distributions.toml; the same logic on the real GPU core is in
tests/integration/test_fetch_resolution.py)."""

from __future__ import annotations

from coreanalyze.fetch.resolve import candidate_names, resolve
from coreanalyze.fetch.target import ProcessTarget, accelerator_versions
from coreanalyze.process.imported import InMemoryDistribution

SITE = "/srv/venv/lib/python3.11/site-packages"
CUDA12 = ProcessTarget("3.11", "x86_64", "cp311", (2, 35), accelerators={"cuda": (12, None)})
CPU = ProcessTarget("3.11", "x86_64", "cp311", (2, 35))


def _pairs(member, packages=(), memory=(), target=CUDA12, loaded=()):
    return [(c.distribution, c.version) for c in resolve(member, list(packages), list(memory), target, loaded, SITE).candidates]


def test_cuda_major_from_the_loaded_libraries():
    assert accelerator_versions([f"{SITE}/nvidia/cublas/lib/libcublas.so.12", "/usr/lib/libc.so.6"]) == {"cuda": (12, None)}
    assert accelerator_versions([f"{SITE}/nvidia/cu13/lib/libnvJitLink.so.13"]) == {"cuda": (13, None)}
    assert accelerator_versions(["/opt/rocm-6.2.1/lib/libamdhip64.so.6.2.41133"]) == {"rocm": (6, 2)}
    assert accelerator_versions(["/usr/lib/x86_64-linux-gnu/libc.so.6"]) == {}


def test_cuda_12_namespace_layout():
    # CUDA 12 wheels: one folder per component, the distribution suffixed -cu12.
    assert _pairs("nvidia/cublas/lib/libcublasLt.so.12") == [("nvidia-cublas-cu12", "12.*"), ("nvidia-cublas", "12.*")]
    assert _pairs("nvidia/cudnn/lib/libcudnn_ops.so.9")[0] == ("nvidia-cudnn-cu12", "9.*")
    memory = [InMemoryDistribution("nvidia_cudnn_cu12", "9.5.1.17", SITE)]
    assert _pairs("nvidia/cudnn/lib/libcudnn.so.9", memory=memory)[0] == ("nvidia-cudnn-cu12", "9.5.1.17")


def test_variant_builds_follow_the_accelerator():
    cupy = [{"name": "cupy", "module": "cupy", "version": "13.3.0", "version_from": "__version__"}]
    assert _pairs("cupy/_core/core.cpython-311-x86_64-linux-gnu.so", cupy)[0] == ("cupy-cuda12x", "13.3.0")
    assert _pairs("cupy/_core/core.cpython-311-x86_64-linux-gnu.so", cupy, target=CPU) == [("cupy", "13.3.0")]
    plugin = [{"name": "jax_plugins", "module": "jax_plugins", "version": None, "version_from": None}]
    memory = [InMemoryDistribution("jax_cuda12_pjrt", "0.4.35", None)]
    assert _pairs("jax_plugins/xla_cuda12/xla_cuda_plugin.so", plugin, memory) == [("jax-cuda12-pjrt", "0.4.35")]


def test_a_loaded_library_names_the_build():
    ort = [{"name": "onnxruntime", "module": "onnxruntime", "version": "1.20.1", "version_from": "__version__"}]
    member = "onnxruntime/capi/onnxruntime_pybind11_state.so"
    assert _pairs(member, ort)[0] == ("onnxruntime", "1.20.1")
    loaded = [f"{SITE}/onnxruntime/capi/libonnxruntime_providers_cuda.so"]
    assert _pairs(member, ort, loaded=loaded)[0] == ("onnxruntime-gpu", "1.20.1")
    assert candidate_names("tensorflow", CPU)[:2] == ["tensorflow", "tensorflow-cpu"]


def test_the_dist_info_in_memory_comes_first():
    tf = [{"name": "tensorflow", "module": "tensorflow", "version": "2.21.0", "version_from": "__version__"}]
    memory = [InMemoryDistribution("tensorflow_cpu", "2.21.0", SITE)]
    assert _pairs("tensorflow/libtensorflow_cc.so.2", tf, memory, target=CPU)[:2] == [
        ("tensorflow-cpu", "2.21.0"), ("tensorflow", "2.21.0")]
    # No version anywhere: nothing to download, and the reason says so.
    (unknown,) = [resolve("mystery/_ext.so", [], [], CPU, (), SITE)]
    assert not unknown.candidates and unknown.unknown == "the process's version is unknown"
