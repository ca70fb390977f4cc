"""Group-rank helpers, subgroups, the *_object collectives, batch_isend_irecv and monitored_barrier on 2 and 3
ranks (tests/ranks/groups_objects.py under mpirun), against torch.distributed's semantics."""

import flambeau_distributed as dist
import pytest


@pytest.mark.parametrize("n", [2, 3])
def test_groups_and_objects(ranks, n):
    r = ranks("groups_objects.py", n=n)
    assert r.returncode == 0, r.stdout + r.stderr
    for k in range(n):
        assert f"rank {k}: groups and objects OK" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("n", [2, 3])
def test_monitored_barrier_names_the_missing_ranks(ranks, n):
    r = ranks("groups_objects.py", "monitored-timeout", n=n, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    who = "Ranks 1, 2" if n == 3 else "Rank 1"  # wait_all_ranks=True with 3 ranks: every missing one
    assert f"rank 0: [monitored_barrier] {who} failed to pass monitoredBarrier in 2000 ms" in r.stdout, r.stdout
    for k in range(n):
        assert f"rank {k}: groups and objects OK" in r.stdout, r.stdout + r.stderr


def test_monitored_barrier_without_rank_0(ranks):
    r = ranks("groups_objects.py", "monitored-no-root", n=3, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for k in (1, 2):
        assert (
            f"rank {k}: [monitored_barrier] Rank {k} successfully reached monitoredBarrier, but received errors while "
            "waiting for send/recv from rank 0" in r.stdout
        ), r.stdout
    for k in range(3):
        assert f"rank {k}: groups and objects OK" in r.stdout, r.stdout + r.stderr


def test_without_a_process_group(monkeypatch):
    # in this (non-MPI) process: what needs no process group, as torch's
    assert dist.get_pg_count() == 0
    assert dist.get_global_rank(dist.group.WORLD, 4) == 4 and dist.get_group_rank(dist.group.WORLD, 4) == 4
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(RuntimeError, match="LOCAL_RANK is not in the environment"):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=3) == 3
    monkeypatch.setenv("LOCAL_RANK", "2")
    assert dist.get_node_local_rank(fallback_rank=3) == 2
    assert not dist.is_torchelastic_launched()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    assert dist.is_torchelastic_launched()
    for fn, args in ((dist.get_process_group_ranks, (None,)), (dist.gather_object, (1, [None])),
                     (dist.monitored_barrier, ()), (dist.send_object_list, ([1], 0))):  # fmt: skip
        with pytest.raises(RuntimeError, match=r"init_process_group\(backend='mpi'\)"):
            fn(*args)
    monkeypatch.setenv("FLAMBEAU_DISTRIBUTED_DEBUG", "loud")
    with pytest.raises(ValueError, match="must be one of OFF, INFO, DETAIL"):
        dist.set_debug_level_from_env()
    monkeypatch.setenv("FLAMBEAU_DISTRIBUTED_DEBUG", "info")
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() == dist.DebugLevel.INFO
    monkeypatch.delenv("FLAMBEAU_DISTRIBUTED_DEBUG")
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL


def test_backend_names_as_torch():
    import datetime

    import torch.distributed as tdist

    for name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert dist.supports_complex(ours) == tdist.supports_complex(theirs), name
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device("cpu:0") == "mpi"
    with pytest.raises(ValueError, match="Default backend not registered for device : cuda"):
        dist.get_default_backend_for_device("cuda")
    assert dist.timedelta is datetime.timedelta is tdist.timedelta
    for name in ("DistError", "DistBackendError", "DistNetworkError", "DistStoreError"):
        ours, theirs = getattr(dist, name), getattr(tdist, name)
        assert [c.__name__ for c in ours.__mro__] == [c.__name__ for c in theirs.__mro__], name
