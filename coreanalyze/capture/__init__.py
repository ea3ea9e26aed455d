"""A crash caught as it happens, where no core would be written: the process is held at its fatal
signal, a core of it is written and analyzed, and then it dies as it would have."""
