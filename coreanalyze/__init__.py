"""coreanalyze: explain why a Python process died in native code."""

__version__ = "0.1.0"
