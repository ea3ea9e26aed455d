"""`coreanalyze watch DIR... --out OUT`: cores analyzed as they arrive, on the server that
writes them, into a batch output directory (batch's index, `merge` and `--since` read it).

    arrival   which files are complete cores (closed, no longer growing)
    state     attempts per core across restarts (a core that ends the analysis twice is recorded)
    coredump  systemd-coredump's record of the crash: attributes, file name, journal entry
    journal   the journal's export and JSON formats, and journalctl
    keep      the keep policy: full core, shrunk core or none per signature; the disk budget
    limits    nice and the address-space limit the analyses run under
    watcher   the loop: arrivals -> batch's worker -> record, kept core, summary

The analysis itself is batch's (batch/runner.LocalBatch with one worker, batch/worker.py),
records and reports are batch's store (batch/store.py).
"""
