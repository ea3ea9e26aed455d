"""The analysis of one core, stage by stage: what runs, in which order, with what it needs."""
