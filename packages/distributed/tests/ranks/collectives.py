"""Rank program: every collective against its expected values (run by test_collectives.py under mpirun -n 2)."""

import os

import flambeau_core as fc
import flambeau_distributed as dist
import numpy as np
from flambeau_core import FlambeauError


def close(t, expected):
    np.testing.assert_allclose(
        np.asarray(t.tolist(), dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=1e-6
    )


def main():
    dist.init_process_group(backend="mpi")
    assert dist.is_initialized()
    r, n = dist.get_rank(), dist.get_world_size()
    assert n == 2 and dist.get_backend() == "mpi"
    # Note [Ring all-reduce]: every all-reduce below goes through Open MPI's ring
    assert os.environ["OMPI_MCA_coll_libnbc_iallreduce_algorithm"] == "1"
    dist.barrier()

    for dtype in (fc.float32, fc.float64, fc.int64, fc.int32, fc.int16, fc.int8, fc.uint8):
        # all_reduce, each op
        base = [[1.0, 2.0, 3.0], [4.0, 5.0 if dtype == fc.uint8 else -5.0, 6.0]]
        vals = [[v * (r + 1) for v in row] for row in base]
        both = [[[v * (k + 1) for v in row] for row in base] for k in range(n)]
        arr = np.asarray(both, dtype=np.float64)
        expected = {
            dist.ReduceOp.SUM: arr.sum(0),
            dist.ReduceOp.PRODUCT: arr.prod(0),
            dist.ReduceOp.MIN: arr.min(0),
            dist.ReduceOp.MAX: arr.max(0),
        }
        if dtype.is_floating_point:
            expected[dist.ReduceOp.AVG] = arr.mean(0)
        for op, want in expected.items():
            t = fc.tensor(vals, dtype=dtype)
            dist.all_reduce(t, op=op)
            assert t.dtype == dtype
            close(t, want)
        # broadcast from each root
        for src in range(n):
            t = fc.tensor(vals, dtype=dtype)
            dist.broadcast(t, src=src)
            close(t, both[src])
        # reduce to each root
        for dst in range(n):
            t = fc.tensor(vals, dtype=dtype)
            dist.reduce(t, dst=dst, op=dist.ReduceOp.SUM)
            close(t, arr.sum(0) if r == dst else vals)
        # all_gather (list and into one tensor)
        out = [fc.zeros([2, 3], dtype=dtype) for _ in range(n)]
        dist.all_gather(out, fc.tensor(vals, dtype=dtype))
        for k in range(n):
            close(out[k], both[k])
        big = fc.zeros([2 * n, 3], dtype=dtype)
        dist.all_gather_into_tensor(big, fc.tensor(vals, dtype=dtype))
        close(big, arr.reshape(2 * n, 3))
        # reduce_scatter: rank k gets the sum over ranks of input_list[k]
        inputs = [fc.tensor([[float(10 * k + r + j) for j in range(3)]], dtype=dtype) for k in range(n)]
        out = fc.zeros([1, 3], dtype=dtype)
        dist.reduce_scatter(out, inputs)
        close(out, [[sum(10 * r + q + j for q in range(n)) for j in range(3)]])
        flat = fc.cat([t.reshape(-1) for t in inputs])
        out = fc.zeros([3], dtype=dtype)
        dist.reduce_scatter_tensor(out, flat, op=dist.ReduceOp.MAX)
        close(out, [10 * r + (n - 1) + j for j in range(3)])
        # gather / scatter to and from each root (async handles)
        for root in range(n):
            outs = [fc.zeros([2, 3], dtype=dtype) for _ in range(n)] if r == root else None
            dist.gather(fc.tensor(vals, dtype=dtype), outs, dst=root, async_op=True).wait()
            if r == root:
                for k in range(n):
                    close(outs[k], both[k])
            parts = [fc.tensor(both[k], dtype=dtype) + root for k in range(n)] if r == root else None
            t = fc.zeros([2, 3], dtype=dtype)
            dist.scatter(t, parts, src=root, async_op=True).wait()
            close(t, arr[r] + root)
        # all_to_all_single: equal blocks (rank q gets block q of every rank), then uneven splits
        src_rows = np.arange(4 * 3).reshape(4, 3) + 100 * r
        out = fc.zeros([4, 3], dtype=dtype)
        dist.all_to_all_single(out, fc.tensor(src_rows.tolist(), dtype=dtype))
        close(out, np.concatenate([(np.arange(12).reshape(4, 3) + 100 * k)[2 * r : 2 * r + 2] for k in range(n)]))
        # rank k sends (k + q + 1) rows to rank q
        ins = [k + r + 1 for k in range(n)]
        outs_n = [k + r + 1 for k in range(n)]
        inp = np.arange(sum(ins) * 2).reshape(-1, 2) + 50 * r
        out = fc.zeros([sum(outs_n), 2], dtype=dtype)
        w = dist.all_to_all_single(out, fc.tensor(inp.tolist(), dtype=dtype), outs_n, ins, async_op=True)
        w.wait()
        want = []
        for k in range(n):
            theirs = np.arange(sum(q + k + 1 for q in range(n)) * 2).reshape(-1, 2) + 50 * k
            start = sum(q + k + 1 for q in range(r))
            want.append(theirs[start : start + r + k + 1])
        close(out, np.concatenate(want))
        # all_to_all with tensors of different sizes: rank k sends q + 1 elements to rank q
        inputs = [fc.tensor([float(10 * r + q)] * (q + 1), dtype=dtype) for q in range(n)]
        outputs = [fc.zeros([r + 1], dtype=dtype) for _ in range(n)]
        assert dist.all_to_all(outputs, inputs, async_op=True).wait()
        for k in range(n):
            close(outputs[k], [10 * k + r] * (r + 1))

    # bool and bitwise ops
    t = fc.tensor([r == 0, False, True])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.tolist() == [True, False, True]
    t = fc.tensor([5 + r, 3], dtype=fc.int64)
    dist.all_reduce(t, op=dist.ReduceOp.BAND)
    assert t.tolist() == [5 & 6, 3]

    # non-contiguous tensors are reduced in place (through a staging copy)
    base = fc.arange(12, dtype=fc.float32).view([3, 4]) * (r + 1)
    view = base.t()
    assert not view.is_contiguous()
    dist.all_reduce(view)
    close(base, (np.arange(12).reshape(3, 4) * 3))

    # a 0-d tensor and an empty one
    t = fc.tensor(float(r + 1))
    dist.all_reduce(t)
    assert t.item() == 3.0
    t = fc.zeros([0, 4])
    dist.all_reduce(t)
    assert tuple(t.shape) == (0, 4)

    # send / recv: both ranks send first (nonblocking underneath: no deadlock), then receive
    peer = 1 - r
    mine = fc.arange(1000, dtype=fc.float64) + 1000 * r
    got = fc.zeros([1000], dtype=fc.float64)
    w = dist.isend(mine, dst=peer, tag=7)
    src = dist.recv(got, src=None, tag=7)
    w.wait()
    assert src == peer
    close(got, np.arange(1000) + 1000 * peer)
    if r == 0:
        dist.send(fc.tensor([1.5, 2.5]), dst=1)
    else:
        t = fc.zeros([2])
        assert dist.recv(t, src=0) == 0
        close(t, [1.5, 2.5])

    # objects
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r})
    assert objs == [{"rank": k} for k in range(n)]
    lst = [r, "x"] if r == 1 else [None, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [1, "x"]

    # async work handles: several in flight, completed in order
    ts = [fc.full([256, 256], float(r + k)) for k in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    bw = dist.broadcast(fc.full([8], float(r)), src=1, async_op=True)
    for k, w in enumerate(works):
        assert w.wait() is True
        assert w.is_completed() and w.is_success() and w.exception() is None
        close(ts[k][0, :2], [2 * k + 1] * 2)
    assert bw.wait()
    res = dist.all_reduce(fc.ones([3]), async_op=True).result()
    close(res[0], [2, 2, 2])
    b = dist.barrier(async_op=True)
    b.wait()
    assert b.is_completed()
    w = dist.irecv(fc.zeros([3]), src=peer, tag=3)
    dist.isend(fc.full([3], float(r)), dst=peer, tag=3).wait()
    assert w.source_rank() == peer

    # new_group: the whole world again, and a group of rank 1 alone (src/dst stay default-group ranks)
    both_g = dist.new_group()
    t = fc.full([3], float(r + 1))
    dist.all_reduce(t, group=both_g, async_op=True).wait()
    close(t, [3, 3, 3])
    assert dist.get_rank(both_g) == r and dist.get_world_size(both_g) == 2
    outs = [fc.zeros([1]) for _ in range(n)] if r == 1 else None
    dist.gather(fc.full([1], float(r)), outs, dst=1, group=both_g)
    if r == 1:
        close(fc.cat(outs), [0, 1])
    solo = dist.new_group([1])
    if r == 1:
        assert dist.get_rank(solo) == 0 and dist.get_world_size(solo) == 1
        t = fc.full([2], 5.0)
        dist.broadcast(t, src=1, group=solo)
        dist.all_reduce(t, group=solo)
        close(t, [5, 5])
        try:
            dist.broadcast(t, src=0, group=solo)
        except ValueError as e:
            assert "src must be a rank of the group [1]" in str(e), str(e)
        else:
            raise AssertionError("a src outside the group went unnoticed")
    else:
        assert solo is dist.group.NON_GROUP_MEMBER and dist.get_rank(solo) == -1
        try:
            dist.all_reduce(fc.ones([1]), group=solo)
        except ValueError as e:
            assert "[all_reduce] this rank (0) is not a member" in str(e), str(e)
        else:
            raise AssertionError("a collective on a group this rank is not in went unnoticed")
    dist.destroy_process_group(solo)
    dist.destroy_process_group(both_g)
    try:
        dist.all_reduce(fc.ones([1]), group=both_g)
    except ValueError as e:
        assert "a live group from new_group()" in str(e), str(e)
    else:
        raise AssertionError("a destroyed group was used")
    dist.barrier()

    # argument errors are raised locally, before any rank communicates
    def raises(kind, words, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except kind as e:
            assert all(w in str(e) for w in words), str(e)
        else:
            raise AssertionError(f"{fn.__name__} did not raise {kind.__name__}")

    if r == 0:
        raises(ValueError, ["[gather]", "gather_list is required"], dist.gather, fc.zeros([2]), None, dst=0)
        raises(ValueError, ["[scatter]", "must be None"], dist.scatter, fc.zeros([2]), [fc.zeros([2])] * 2, src=1)
        raises(ValueError, ["[scatter]", "src must be a rank"], dist.scatter, fc.zeros([2]), None, src=5)
    raises(TypeError, ["[gather]", "dtype"], dist.gather, fc.zeros([2]), [fc.zeros([2], dtype=fc.int64)] * 2, dst=r)
    raises(
        FlambeauError, ["[all_to_all_single]", "not divisible"], dist.all_to_all_single, fc.zeros([3]), fc.zeros([3])
    )
    raises(
        FlambeauError, ["sum to 3", "has 4 rows"], dist.all_to_all_single, fc.zeros([4]), fc.zeros([4]), None, [1, 2]
    )
    raises(ValueError, ["[all_to_all]", "world_size=2"], dist.all_to_all, [fc.zeros([1])], [fc.zeros([1])] * 2)

    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"rank {r}: collectives OK", flush=True)


if __name__ == "__main__":
    main()
