"""Where this system put its cores: core_pattern, systemd-coredump, apport, the working directory."""
