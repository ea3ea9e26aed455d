"""Which Python source files are the user's own, and which belong to the frameworks.

The Python line a user recognizes is the innermost frame of their own code, not the
TensorFlow, NumPy or standard-library frames between it and the native crash.
"""

from __future__ import annotations

import re

LIBRARY_FILES: tuple[str, ...] = (
    r"/(?:site|dist)-packages/(?:tensorflow|tensorflow_core|tf_keras|keras|absl|numpy|tensorboard)/",
    r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)",
    r"^<frozen ",
)
_LIBRARY = re.compile("|".join(f"(?:{p})" for p in LIBRARY_FILES))


def is_library_file(path: str | None) -> bool:
    return bool(path) and _LIBRARY.search(path) is not None
