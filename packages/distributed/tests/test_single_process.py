"""A script started without mpirun is a world of one rank (MPI's singleton), and leaves nothing behind."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import mpi_env

PROGRAM = """
import flambeau_core as fc
import flambeau_distributed as dist
dist.init_process_group(backend="mpi")
t = fc.arange(4, dtype=fc.float32)
dist.all_reduce(t)
dist.broadcast(t, src=0)
w = dist.all_reduce(t, op=dist.ReduceOp.MAX, async_op=True)
w.wait()
print(dist.get_rank(), dist.get_world_size(), t.tolist())
dist.destroy_process_group()
"""


def test_singleton_world_of_one_leaves_no_shared_memory():
    shm = Path("/dev/shm")
    before = set(os.listdir(shm)) if shm.is_dir() else set()
    env = {k: v for k, v in mpi_env().items() if not k.startswith(("OMPI_COMM_WORLD", "PMIX_", "PMI_"))}
    r = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "0 1 [0.0, 1.0, 2.0, 3.0]"
    after = set(os.listdir(shm)) if shm.is_dir() else set()
    assert not {f for f in after - before if f.startswith("sm_segment")}, after - before


def test_nn_parallel_has_data_parallel_as_torch():
    import flambeau_nn as nn
    import torch
    from flambeau_distributed import parallel

    assert parallel.DataParallel is nn.DataParallel
    assert hasattr(torch.nn.parallel, "DataParallel")
