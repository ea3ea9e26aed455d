"""A container image as the sysroot: `docker save` / `podman save` tarballs and OCI image layouts.

The image is read in place (store.py), its layers named by its manifest (manifest.py) and
applied in order with their whiteouts into an index of the final tree (layers.py, index.py);
only the files a core needs are copied out, into a cache keyed by the image ID (extract.py,
sysroot.py), and that directory then serves as an ordinary --sysroot.
"""

from coreanalyze.image.errors import ImageError
from coreanalyze.image.sysroot import ImageSysroot, image_cache, image_sysroot, is_image, prepare_image

__all__ = ["ImageError", "ImageSysroot", "image_cache", "image_sysroot", "is_image", "prepare_image"]
