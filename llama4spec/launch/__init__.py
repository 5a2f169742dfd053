"""Where server groups run: one after another here, several at once on this machine
(``run --parallel N``), or as Slurm jobs through submitit (``run --launcher slurm``)."""
