"""An image that cannot be used as a sysroot is bad input: one line, exit 2."""

from coreanalyze.base.errors import BadInput


class ImageError(BadInput):
    """Not an image, an image this tool cannot read, or a hostile one (paths leaving it)."""


class AmbiguousImage(ImageError):
    """An index of several manifests, none chosen by the core's architecture."""
