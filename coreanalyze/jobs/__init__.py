"""One training job, many processes: which job and rank a core (or a pasted log) belongs to, what
a rank was blocked in when it waited for its peers, and the job's verdict over its ranks.

    identity  the process's environment (TF_CONFIG, torchrun, JAX, Open MPI, Horovod, SLURM), and
              JAX's arguments on its command line -> job and rank
    waiting   a rank's report -> crashed on its own, waiting for its peers, or killed; what it waited in
    verdict   the ranks of one job -> the root-cause rank(s) and every other rank's evidence
"""
