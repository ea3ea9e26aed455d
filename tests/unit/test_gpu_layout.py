"""Bounds of the GPU core's row decoding and of the search for a GPU core beside a CPU core.
The facts read from a real GPU core are tested in tests/integration/test_gpu_core.py."""

from __future__ import annotations

import struct

from coreanalyze.gpu.layout import decode_rows, load_layout
from coreanalyze.gpu.locate import locate_gpu_core


def _row(table, values: dict[str, int], size: int) -> bytes:
    """A row of `size` bytes with the given fields set, laid out from the layout data."""
    row = bytearray(size)
    for f in table.fields:
        if f.name in values and f.end <= size:
            struct.pack_into(f.format, row, f.offset, values[f.name])
    return bytes(row)


def test_layouts_follow_c_alignment():
    tables = load_layout().tables
    # cudacoredump.h: CudbgThreadTableEntry's u32 fields follow two u64; CudbgSmTableEntry's
    # errorPC (u64) follows four u32; CudbgDeviceTableEntry's u32 run follows three u64.
    assert [f.offset for f in tables["lane_table"].fields][:4] == [0, 8, 16, 20]
    assert {f.name: f.offset for f in tables["sm_table"].fields}["errorPC"] == 16
    assert {f.name: f.offset for f in tables["device_table"].fields}["numSMs"] == 36
    assert load_layout().exception_name(14) == "Warp Illegal Address"
    assert load_layout().exception_name(999) == "GPU exception 999"


def test_rows_of_a_newer_driver_keep_their_known_fields():
    lanes = load_layout().tables["lane_table"]
    data = _row(lanes, {"virtualPC": 0x1000, "exception": 14, "threadIdxX": 5}, 56) * 3
    rows = decode_rows(lanes, data, 56, max_rows=10)
    assert len(rows) == 3 and rows[2]["exception"] == 14 and rows[2]["threadIdxX"] == 5


def test_rows_of_an_older_driver_lack_the_later_fields():
    sms = load_layout().tables["sm_table"]
    rows = decode_rows(sms, _row(sms, {"smId": 7}, 8) * 2, 8, max_rows=10)
    assert rows == [{"smId": 7, "pad": 0}, {"smId": 7, "pad": 0}]


def test_rows_too_short_for_the_table_and_row_limits():
    lanes = load_layout().tables["lane_table"]
    assert decode_rows(lanes, b"\0" * 64, 16, max_rows=10) == []  # not a lane table's rows
    assert decode_rows(lanes, b"\0" * 56 * 100, 56, max_rows=4) == [decode_rows(lanes, b"\0" * 56, 56, 1)[0]] * 4
    assert decode_rows(lanes, b"\0" * 55, 56, max_rows=4) == []  # a cut row is no row


def _gpu_core_header() -> bytes:
    # e_ident (ELF64, little-endian), e_type ET_CORE, e_machine EM_CUDA
    return b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack("<HH", 4, 190)


def test_the_gpu_core_is_found_only_beside_the_core(tmp_path):
    (tmp_path / "cores").mkdir()
    (tmp_path / "cores" / "core.7").write_bytes(b"")
    (tmp_path / "cores" / "gpu.7.nvcudmp").write_bytes(_gpu_core_header())
    (tmp_path / "gpu.7.nvcudmp").write_bytes(_gpu_core_header())
    (tmp_path / "outside.nvcudmp").write_bytes(_gpu_core_header())
    core = str(tmp_path / "cores" / "core.7")
    found = locate_gpu_core(core, 7, {"CUDA_COREDUMP_FILE": "/far/away/gpu.%p.nvcudmp", "CUDA_ENABLE_COREDUMP_ON_EXCEPTION": "1"})
    assert found.found == str(tmp_path / "cores" / "gpu.7.nvcudmp")
    assert found.expected == "/far/away/gpu.7.nvcudmp" and found.enabled
    # A path from the core never leads out of the core's directory.
    for hostile in ("../outside.nvcudmp", "../../outside.nvcudmp", "/..", "..", "outside.nvcudmp/..", "../*", "*"):
        lookup = locate_gpu_core(core, 8, {"CUDA_COREDUMP_FILE": hostile})
        assert lookup.found is None, hostile
    # Only the base name counts: the one beside the core, not the one the path names.
    assert locate_gpu_core(core, 7, {"CUDA_COREDUMP_FILE": "../gpu.%p.nvcudmp"}).found == str(tmp_path / "cores" / "gpu.7.nvcudmp")


def test_the_default_name_and_glob_characters(tmp_path):
    (tmp_path / "core.9").write_bytes(b"")
    (tmp_path / "core_1764000000_node-3_9.nvcudmp").write_bytes(_gpu_core_header())
    (tmp_path / "core_1764000000_node-3_99.nvcudmp").write_bytes(_gpu_core_header())
    (tmp_path / "gpu.[9].nvcudmp").write_bytes(b"not a GPU core")
    core = str(tmp_path / "core.9")
    assert locate_gpu_core(core, 9, {}).found == str(tmp_path / "core_1764000000_node-3_9.nvcudmp")
    assert locate_gpu_core(core, 9, {}).expected == "core_<time>_<host>_9.nvcudmp"
    # Brackets in the pattern are the file's name, not a glob; a file that is no GPU core is not it.
    assert locate_gpu_core(core, 9, {"CUDA_COREDUMP_FILE": "gpu.[%p].nvcudmp"}).found == str(tmp_path / "core_1764000000_node-3_9.nvcudmp")


def test_kernel_categories_are_rules_data():
    from coreanalyze.gpu.rules import gpu_rules

    rules = gpu_rules()

    def category(kernel: str) -> str:
        rule = rules.kernel_rule(kernel)
        return rule.category if rule else rules.default_category

    assert category("void tensorflow::functor::BiasNHWCKernel<float>(int, float const*, float const*, float*, int)") == "kernel-compute"
    assert category("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<...>, long>(...)") == "kernel-compute"
    assert category("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, ...)") == "kernel-compute"
    assert category("loop_add_fusion") == "xla" and category("input_reduce_fusion_3") == "xla" and category("triton_gemm_dot_1") == "xla"
    assert category("ampere_sgemm_128x64_nn") == "gpu-driver" and category("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "gpu-driver"
    assert category("scatter_rows") == rules.default_category == "gpu-driver"
    assert rules.driver_modules.search("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04")
    assert not rules.driver_modules.search("/opt/lib/libcudart.so.13")
