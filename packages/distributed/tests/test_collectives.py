"""Each collective on 2 ranks against its expected values (tests/ranks/collectives.py under mpirun)."""


def test_collectives_two_ranks(ranks):
    r = ranks("collectives.py")
    assert r.returncode == 0, r.stdout + r.stderr
    for k in range(2):
        assert f"rank {k}: collectives OK" in r.stdout, r.stdout + r.stderr
