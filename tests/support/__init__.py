"""What the tests share: making real cores (coregen, tfcores, armcores, hangcores, pycrash),
running the CLI (clirun), watching processes (procs), mutating cores (fuzzcore), and the one
rule for a missing dependency (require: a skip on a workstation, a failure in CI)."""
