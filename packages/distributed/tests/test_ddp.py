"""DistributedDataParallel on 2 ranks: the same parameters as one process on the combined batch."""


def test_ddp_matches_one_process(ranks):
    # buckets (one, and several launched during backward), gradient_as_bucket_view,
    # no_sync accumulation, unused parameters (the error, and find_unused_parameters)
    r = ranks("ddp.py")
    assert r.returncode == 0, r.stdout + r.stderr
    for k in range(2):
        assert f"rank {k}: ddp OK" in r.stdout, r.stdout + r.stderr


def test_ddp_example_script(ranks):
    r = ranks("train_example.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 0: replicas identical" in r.stdout, r.stdout + r.stderr
