"""Bad input across ranks: clear errors naming the rank, and never a hang (mpirun's timeout would fail the test)."""

import flambeau_distributed as dist
import pytest


def test_mismatched_shapes_dtypes_and_arguments(ranks):
    r = ranks("errors.py", "mismatch")
    assert r.returncode == 0, r.stdout + r.stderr
    for k in range(2):
        assert f"rank {k}: errors OK" in r.stdout, r.stdout + r.stderr
        assert f"rank {k}: [all_reduce] rank 1 called it with arguments that differ from rank 0's" in r.stdout


def test_a_rank_that_raises_aborts_the_others(ranks):
    # rank 0 is blocked in all_reduce when rank 1 raises: the job must end, not hang
    r = ranks("errors.py", "raise", timeout=120)
    assert r.returncode != 0
    assert "rank 1 of 2 raised an uncaught exception; aborting every rank" in r.stderr, r.stderr
    assert "ValueError: rank 1 fails on purpose" in r.stderr
    assert "MPI_ABORT was invoked on rank 1" in r.stdout + r.stderr


def test_a_rank_raising_in_ddp_backward_aborts_the_others(ranks):
    # rank 0 waits for bucket all-reduces (the split first layer's row blocks) that rank 1, whose backward
    # raised, never posts: the job must end, not hang
    r = ranks("errors.py", "ddp-raise", timeout=120)
    assert r.returncode != 0
    assert "rank 0: step 0 done" in r.stdout and "rank 1: step 0 done" in r.stdout, r.stdout + r.stderr
    assert "rank 1: step 1 done" not in r.stdout
    assert "rank 1 of 2 raised an uncaught exception; aborting every rank" in r.stderr, r.stderr
    assert "ValueError: rank 1's backward fails on purpose" in r.stderr
    assert "MPI_ABORT was invoked on rank 1" in r.stdout + r.stderr


def test_a_missing_rank_times_out(ranks):
    # rank 1 never joins rank 0's all_reduce: Work.wait raises after the 3-second timeout; the
    # next call, queued behind it, times out too and its uncaught error aborts the job
    r = ranks("errors.py", "timeout", timeout=120)
    assert r.returncode != 0
    assert "rank 0: async timeout raised" in r.stdout, r.stdout + r.stderr
    assert "DistBackendError: [broadcast] rank 0: timed out after 3 s waiting for the other ranks" in r.stderr, r.stderr
    assert "aborting every rank" in r.stderr


def test_exiting_with_a_stuck_call_aborts(ranks):
    r = ranks("errors.py", "timeout-exit", timeout=120)
    assert r.returncode != 0
    assert "rank 0: destroy_process_group with a collective still waiting for the other ranks" in r.stderr, r.stderr


def test_a_missing_rank_times_out_blocking(ranks):
    # a blocking call runs on the caller's thread: the watchdog reports the timeout and aborts
    r = ranks("errors.py", "timeout-blocking", timeout=120)
    assert r.returncode != 0
    assert "[all_reduce] rank 0: timed out after 3 s waiting for the other ranks" in r.stderr, r.stderr
    assert "aborting every rank (MPI_Abort)" in r.stderr


def test_without_a_process_group():
    # in this (non-MPI) process: nothing initialised, and importing did not start MPI
    assert not dist.is_initialized()
    assert dist.is_available()
    for fn in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(RuntimeError, match=r"init_process_group\(backend='mpi'\)"):
            fn()
    with pytest.raises(RuntimeError, match=r"\[DistributedSampler\] no process group"):
        dist.DistributedSampler(range(10))
    assert list(dist.DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False)) == [1, 3, 0]
    dist.destroy_process_group()  # a no-op


def test_distributed_sampler_is_flambeau_datas():
    import flambeau_data

    assert dist.DistributedSampler is flambeau_data.DistributedSampler
