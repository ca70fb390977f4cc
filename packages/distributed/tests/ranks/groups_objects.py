"""Rank program: group-rank helpers, subgroups, the *_object collectives, batched point to point and
monitored_barrier against torch.distributed's semantics (run by test_groups_objects.py under mpirun -n 2 and 3).

``python groups_objects.py``: every case (prints ``rank R: groups and objects OK``);
``python groups_objects.py monitored-timeout``: rank 0 waits in monitored_barrier for ranks that never come;
``python groups_objects.py monitored-no-root``: the other ranks wait in it for a rank 0 that never comes.
"""

import datetime
import pickle
import sys
import warnings

import flambeau_core as fc
import flambeau_distributed as dist
from flambeau_core import FlambeauError


def raises(kind, words, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as e:
        assert type(e) is kind or kind is RuntimeError, f"{fn.__name__} raised {type(e).__name__}: {e}"
        assert all(w in str(e) for w in words), str(e)
    else:
        raise AssertionError(f"{fn.__name__} did not raise {kind.__name__}")


def group_helpers(r, n):
    assert dist.get_pg_count() == 1
    assert dist.get_process_group_ranks(None) == list(range(n))
    assert dist.get_process_group_ranks(dist.group.WORLD) == list(range(n))
    assert dist.GroupMember is dist.group
    # group.WORLD maps ranks to themselves, unchecked (torch's too)
    assert dist.get_group_rank(dist.group.WORLD, 7) == 7 and dist.get_global_rank(dist.group.WORLD, 7) == 7
    g = dist.new_group([n - 1, 0])  # members sorted, as torch's: group rank 0 is rank 0, 1 is rank n - 1
    assert dist.get_pg_count() == 2
    if r in (0, n - 1):
        assert dist.get_process_group_ranks(g) == [0, n - 1]
        assert dist.get_group_rank(g, n - 1) == 1 and dist.get_group_rank(g, 0) == 0
        assert dist.get_global_rank(g, 1) == n - 1 and dist.get_global_rank(g, 0) == 0
        assert dist.get_rank(g) == (0 if r == 0 else 1)
        outside = 1 if n == 3 else 5
        raises(ValueError, [f"Global rank {outside} is not part of group"], dist.get_group_rank, g, outside)
        raises(ValueError, ["Group rank 2 is not part of group"], dist.get_global_rank, g, 2)
    else:
        assert g is dist.group.NON_GROUP_MEMBER
        raises(ValueError, ["is not registered"], dist.get_group_rank, g, 0)
        raises(ValueError, ["Invalid process group specified"], dist.get_backend_config, g)
    # one node: the launcher's local rank is the rank
    assert dist.get_node_local_rank() == r
    # the debug level of the groups made afterwards: OFF turns the metadata check off
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    assert g is dist.group.NON_GROUP_MEMBER or g.check
    dist.set_debug_level(dist.DebugLevel.OFF)
    unchecked = dist.new_group()
    assert dist.get_debug_level() == dist.DebugLevel.OFF and not unchecked.check
    dist.set_debug_level_from_env()
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL and dist.new_group().check
    raises(TypeError, ["must be a DebugLevel"], dist.set_debug_level, "OFF")
    return g


def subgroups(r, n):
    raises(ValueError, ["Default group size only takes effect when CUDA is available"], dist.new_subgroups)
    raises(ValueError, ["(0) must be positive"], dist.new_subgroups, 0)
    raises(ValueError, [f"must not exceed the world size ({n})"], dist.new_subgroups, n + 1)
    if n == 3:
        raises(ValueError, ["The world size (3) must be divisible by 'group_size=2'"], dist.new_subgroups, 2)
    count = dist.get_pg_count()
    mine, groups = dist.new_subgroups(1)
    assert len(groups) == n and mine is groups[r] and dist.get_pg_count() == count + n
    assert [dist.get_process_group_ranks(gr) for gr in groups if gr is not dist.group.NON_GROUP_MEMBER] == [[r]]
    mine, groups = dist.new_subgroups(n)
    assert len(groups) == 1 and mine is groups[0] and dist.get_process_group_ranks(mine) == list(range(n))
    mine, groups = dist.new_subgroups_by_enumeration([[0], list(range(1, n))])
    assert mine is groups[0 if r == 0 else 1]
    t = fc.tensor([float(r + 1)])
    dist.all_reduce(t, group=mine)
    assert t.tolist() == ([1.0] if r == 0 else [float(sum(range(2, n + 1)))])
    raises(ValueError, ["cannot be empty"], dist.new_subgroups_by_enumeration, [])
    raises(ValueError, ["Rank 1 has appeared in both subgroup [0, 1] and [1]"],
           dist.new_subgroups_by_enumeration, [[0, 1], [1]])  # fmt: skip


def objects(r, n, g):
    def item(k):
        return {"rank": k, "data": list(range(k)), "name": f"rank-{k}", "t": (k, None)}

    for dst in range(n):
        out = [None] * n if r == dst else None
        assert dist.gather_object(item(r), out, dst=dst) is None
        if r == dst:
            assert out == [item(k) for k in range(n)], out
    if r in (0, n - 1):  # group_dst: a rank within g
        out = [None, None] if r == n - 1 else None
        dist.gather_object(item(r), out, group=g, group_dst=1)
        if r == n - 1:
            assert out == [item(0), item(n - 1)], out
    # torch: the list is required on dst, refused elsewhere (raised before anything moves, on every rank here)
    raises(ValueError, ["``gather_list`` must be specified on destination rank"], dist.gather_object, 1, None, dst=r)
    raises(ValueError, ["``gather_list`` must be specified on destination rank"], dist.gather_object, 1, [], dst=r)
    raises(ValueError, ["must NOT be specified on non-destination ranks"],
           dist.gather_object, 1, [None] * n, dst=(r + 1) % n)  # fmt: skip
    raises(ValueError, ["Can't specify both"], dist.gather_object, 1, [None] * n, dst=0, group_dst=0)
    raises(ValueError, ["dst must be a rank"], dist.gather_object, 1, [None] * n, dst=n)
    # a list shorter than the group: IndexError on dst once the objects arrived (torch's), the others are done
    short = [None] if r == 0 else None
    if r == 0:
        raises(IndexError, [], dist.gather_object, item(r), short, dst=0)
        assert short == [item(0)]
    else:
        dist.gather_object(item(r), None, dst=0)
    longer = [None] * (n + 1) if r == 0 else None
    dist.gather_object(item(r), longer, dst=0)
    if r == 0:
        assert longer == [*(item(k) for k in range(n)), None]

    for src in range(n):
        out = ["untouched", "kept"]
        dist.scatter_object_list(out, [item(10 + k) for k in range(n)] if r == src else None, src=src)
        assert out == [item(10 + r), "kept"], out
    if r in (0, n - 1):
        out = [None]
        dist.scatter_object_list(out, [item(20), item(21)] if r == n - 1 else None, group=g, group_src=1)
        assert out == [item(20 if r == 0 else 21)], out
    raises(ValueError, ["scatter_object_output_list to be a list of size at least 1"],
           dist.scatter_object_list, [], [1] * n)  # fmt: skip
    raises(ValueError, ["must provide non-None scatter_object_input_list"], dist.scatter_object_list, [None], src=r)
    # a source list of another length than the group: RuntimeError on every rank (no rank left waiting)
    raises(RuntimeError, ["Incorrect input list size 1 on the source rank 0", f"should be {n}"],
           dist.scatter_object_list, [None], [1] if r == 0 else None, src=0)  # fmt: skip

    # send/recv_object_list around the ring: rank 0 sends first, the others receive first
    nxt, prev = (r + 1) % n, (r - 1) % n
    mine = [item(r), b"x" * (1 << 20) + bytes([r]), fc.__name__]  # 1 MB: a message MPI cannot send eagerly
    got = [None, None, None]

    def receive():
        assert dist.recv_object_list(got, src=prev) == prev
        assert got == [item(prev), b"x" * (1 << 20) + bytes([prev]), fc.__name__]

    if r != 0:
        receive()
    dist.send_object_list(mine, dst=nxt)
    if r == 0:
        receive()
    if r == 0:
        dist.send_object_list(["in g"], group=g, group_dst=1)
    elif r == n - 1:
        got = [None]
        assert dist.recv_object_list(got, group=g, group_src=0) == 0 and got == ["in g"]
    raises(ValueError, ["Invalid destination rank: destination rank should not be the same"],
           dist.send_object_list, [1], dst=r)  # fmt: skip
    raises(ValueError, ["Invalid source rank: source rank should not be the same"],
           dist.recv_object_list, [None], src=r)  # fmt: skip
    raises(ValueError, ["Must specify global_rank or group_rank"], dist.recv_object_list, [None])
    raises(ValueError, ["src must be a rank"], dist.recv_object_list, [None], src=n + 3)
    # lists of other lengths: the receiver's error names the sender
    sent = ["a", "b"]
    if r == 0:
        dist.send_object_list(sent, dst=1)
    elif r == 1:
        raises(FlambeauError, ["expected 24 bytes", "rank 0 sent 16 bytes"], dist.recv_object_list, [None] * 3, src=0)
        rest = fc.empty([sum(len(pickle.dumps(o)) for o in sent)], dtype=fc.uint8)
        dist.recv(rest, src=0)  # the objects' message, left behind by the failed receive


def batched(r, n, g):
    nxt, prev = (r + 1) % n, (r - 1) % n
    got_next, got_prev = fc.zeros([3]), fc.zeros([3])
    ops = [
        dist.P2POp(dist.isend, fc.full([3], float(r)), nxt),
        dist.P2POp(dist.irecv, got_prev, prev),
        dist.P2POp(dist.isend, fc.full([3], 10.0 + r), prev, tag=1),
        dist.P2POp(dist.irecv, got_next, nxt, tag=1),
    ]
    works = dist.batch_isend_irecv(ops)
    assert len(works) == 4 and all(isinstance(w, dist.Work) for w in works)
    assert all(w.wait() for w in works)
    assert got_prev.tolist() == [float(prev)] * 3 and got_next.tolist() == [10.0 + nxt] * 3
    if r in (0, n - 1):
        other = 1 - dist.get_rank(g)
        op = dist.P2POp(dist.isend, fc.ones([1]), group=g, group_peer=other)
        assert op.peer == (n - 1 if r == 0 else 0) and op.group_peer == other
        out = fc.zeros([1])
        works = dist.batch_isend_irecv([op, dist.P2POp(dist.irecv, out, group=g, group_peer=other)])
        assert all(w.wait() for w in works) and out.tolist() == [1.0]
        raises(ValueError, ["All ops need to use the same group"],
               dist.batch_isend_irecv, [op, dist.P2POp(dist.irecv, out, 0 if r else n - 1)])  # fmt: skip
        raises(ValueError, ["Global rank"], dist.P2POp, dist.isend, out, 1 if n == 3 else 7, group=g)
    raises(ValueError, ["Invalid ``op``"], dist.P2POp, dist.send, fc.zeros([1]), nxt)
    raises(TypeError, ["Expected parameter `tensor` of type Tensor"], dist.P2POp, dist.isend, [1.0], nxt)
    raises(ValueError, ["Must specify global_rank or group_rank"], dist.P2POp, dist.isend, fc.zeros([1]))
    raises(ValueError, ["Can't specify both"], dist.P2POp, dist.isend, fc.zeros([1]), 0, group_peer=0)
    raises(IndexError, [], dist.batch_isend_irecv, [])
    raises(ValueError, ["Invalid ``p2p_op_list``"], dist.batch_isend_irecv, [ops[0], "not an op"])
    raises(ValueError, ["Invalid ``p2p_op_list``"], dist.batch_isend_irecv, tuple(ops))


def monitored(r, n, g):
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=60))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=60), wait_all_ranks=True)
    if r in (0, n - 1):
        dist.monitored_barrier(group=g, timeout=datetime.timedelta(seconds=60))
    # a group whose rank 0 is not the default group's: its first member waits for the others
    mine, _ = dist.new_subgroups_by_enumeration([[0], list(range(1, n))])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.monitored_barrier(group=mine, timeout=60.0, wait_all_ranks=True)  # seconds, with torch's warning
    assert [w.category for w in caught] == [UserWarning] and "timedelta" in str(caught[0].message)
    raises(TypeError, ["timedelta"], dist.monitored_barrier, timeout="soon")


def coalesced(r, n):
    total = sum(k + 1 for k in range(n))  # sum over ranks of (rank + 1)
    for async_op in (False, True):
        a, b = fc.full([2], float(r + 1)), fc.arange(6.0).view([2, 3]) * (r + 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fut = dist.all_reduce_coalesced([a, b], op=dist.ReduceOp.SUM, async_op=async_op)
        assert [w.category for w in caught] == [FutureWarning] and "all_reduce_coalesced" in str(caught[0].message)
        if async_op:
            assert isinstance(fut, dist.Future) and fut.wait() == [a, b]
        else:
            assert fut is None
        assert a.tolist() == [float(total)] * 2
        assert b.tolist() == [[float(total * v) for v in range(3)], [float(total * v) for v in range(3, 6)]]
        out = [[fc.zeros([2]), fc.zeros([1, 3], dtype=fc.float32)] for _ in range(n)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fut = dist.all_gather_coalesced(out, [fc.full([2], float(r)), fc.full([3], 10.0 * r)], async_op=async_op)
        if async_op:
            assert fut.wait() == [t for lst in out for t in lst]
        assert [[t.tolist() for t in lst] for lst in out] == [[[float(k)] * 2, [[10.0 * k] * 3]] for k in range(n)]
    warnings.simplefilter("ignore", FutureWarning)
    t = fc.tensor([float(r)])
    dist.all_reduce_coalesced(t, op=dist.ReduceOp.MAX)  # one tensor: a list of one, as torch's
    assert t.tolist() == [float(n - 1)]
    raises(ValueError, ["different dtypes"], dist.all_reduce_coalesced, [fc.ones([1]), fc.ones([1], dtype=fc.int64)])
    raises(TypeError, ["list[Tensor]"], dist.all_reduce_coalesced, [fc.ones([1]), 1.0])
    raises(RuntimeError, ["output lists should be equal to world size"],
           dist.all_gather_coalesced, [[fc.zeros([1])]] * (n + 1), [fc.ones([1])])  # fmt: skip
    raises(RuntimeError, ["invalid output size: (expected length 2, got 1)"],
           dist.all_gather_coalesced, [[fc.zeros([1])]] * n, [fc.ones([1])] * 2)  # fmt: skip
    raises(RuntimeError, ["invalid size of output tensor at index 0"],
           dist.all_gather_coalesced, [[fc.zeros([2])]] * n, [fc.ones([1])])  # fmt: skip
    out = fc.zeros([n])
    dist.all_gather_single(out, fc.tensor([float(r)]))
    assert out.tolist() == [float(k) for k in range(n)]
    one = fc.zeros([1])
    dist.reduce_scatter_single(one, fc.arange(float(n)))
    assert one.tolist() == [float(n * r)]


def availability():
    assert dist.is_available() and dist.is_mpi_available() and dist.is_backend_available("mpi")
    assert dist.is_backend_available("MPI")
    for name in ("gloo", "nccl", "ucc", "xccl"):
        assert not dist.is_backend_available(name)
    assert not any(f() for f in (dist.is_gloo_available, dist.is_nccl_available, dist.is_ucc_available,
                                 dist.is_xccl_available))  # fmt: skip
    assert not dist.is_torchelastic_launched()
    assert dist.get_backend_config() == "cpu:mpi"
    for cls in (dist.DistBackendError, dist.DistNetworkError, dist.DistStoreError):
        assert issubclass(cls, dist.DistError) and issubclass(cls, RuntimeError)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "all"
    dist.init_process_group(backend="mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    if mode == "monitored-timeout":
        if r == 0:
            try:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=2), wait_all_ranks=n == 3)
            except dist.DistBackendError as e:
                print(f"rank 0: {e}", flush=True)
            else:
                raise AssertionError("monitored_barrier passed without the other ranks")
        dist.barrier()
    elif mode == "monitored-no-root":
        if r != 0:
            try:
                dist.monitored_barrier(timeout=datetime.timedelta(seconds=2))
            except RuntimeError as e:
                print(f"rank {r}: {e}", flush=True)
            else:
                raise AssertionError("monitored_barrier passed without rank 0")
        dist.barrier()
    else:
        availability()
        g = group_helpers(r, n)
        subgroups(r, n)
        objects(r, n, g)
        batched(r, n, g)
        coalesced(r, n)
        monitored(r, n, g)
    dist.barrier()
    dist.destroy_process_group()
    assert dist.get_pg_count() == 0
    print(f"rank {r}: groups and objects OK", flush=True)


if __name__ == "__main__":
    main()
