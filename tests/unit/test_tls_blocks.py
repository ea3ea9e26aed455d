"""Where the C++ exception a thread handles is looked for: its TLS blocks (abortmsg._tls_blocks)."""

from __future__ import annotations


def test_static_tls_is_read_from_where_its_mapping_begins():
    """ASLR may put the thread pointer less than STATIC_TLS_SPAN above the start of its
    mapping: the block read is then clipped there (a read across the start got nothing, and
    the handled C++ exception went unseen in about one core in six)."""
    from types import SimpleNamespace

    from coreanalyze.classify.abortmsg import STATIC_TLS_SPAN, _tls_blocks

    segment = SimpleNamespace(start=0x7F0000003000, end=0x7F0000007000)
    tp = segment.start + 13376

    class Memory:
        segments = [segment]

        def read(self, address, size):
            return None  # no dtv: only the static block

    assert _tls_blocks(Memory(), tp) == [(segment.start, tp - segment.start)]
    far = segment.start + STATIC_TLS_SPAN + 64
    assert _tls_blocks(Memory(), far)[0] == (far - STATIC_TLS_SPAN, STATIC_TLS_SPAN)
