"""The CPython interpreter inside a core: its runtime structures and the walker of its frames."""
