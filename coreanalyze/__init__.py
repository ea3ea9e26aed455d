"""coreanalyze: explain why a Python process died in native code."""

__version__ = "0.1.0"


def load_ipython_extension(ipython) -> None:
    """`%load_ext coreanalyze`: watch this kernel for a crash (coreanalyze.capture.notebook)."""
    from coreanalyze.capture.notebook import load

    load(ipython)
