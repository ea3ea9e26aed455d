"""The crashed process as the core holds it: memory, modules, symbols, threads, and the readers of its state."""
