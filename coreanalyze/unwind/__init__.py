"""The unwinder seam: what the analysis asks of a debugger that has a core open."""
