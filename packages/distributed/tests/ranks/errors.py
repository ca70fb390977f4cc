"""Rank program: bad input across ranks (run under mpirun -n 2 with a mode argument)."""

import datetime
import sys
import time

import flambeau_core as fc
import flambeau_distributed as dist
import flambeau_nn as nn
from flambeau_core import FlambeauError


def expect(kind, fragments, fn):
    try:
        fn()
    except kind as e:
        for f in fragments:
            assert f in str(e), (f, str(e))
        return str(e)
    raise AssertionError(f"{kind.__name__} not raised")


def main(mode):
    timeout = datetime.timedelta(seconds=3) if mode.startswith("timeout") else None
    dist.init_process_group("mpi", timeout=timeout)
    r = dist.get_rank()
    if mode == "raise":
        if r == 1:
            raise ValueError("rank 1 fails on purpose")
        dist.all_reduce(fc.ones([4]))  # rank 0 waits here until the job is aborted
        time.sleep(60)
    elif mode == "timeout":
        if r == 0:
            w = dist.all_reduce(fc.ones([4]), async_op=True)  # rank 1 never joins
            expect(dist.DistBackendError, ["[all_reduce] rank 0: timed out after 3 s"], w.wait)
            assert not w.is_completed()
            print("rank 0: async timeout raised", flush=True)
            dist.broadcast(fc.ones([4]))  # queued behind it: times out too, uncaught: the abort
        time.sleep(60)
    elif mode == "timeout-exit":
        if r == 0:
            w = dist.all_reduce(fc.ones([4]), async_op=True)  # rank 1 never joins
            expect(dist.DistBackendError, ["timed out"], w.wait)
            dist.destroy_process_group()  # the call is still in MPI: abort rather than hang in MPI_Finalize
        time.sleep(60)
    elif mode == "timeout-blocking":
        if r == 0:
            dist.all_reduce(fc.ones([4]))  # run on this thread: the watchdog aborts the job
        time.sleep(60)
    elif mode == "ddp-raise":
        # rank 1's backward raises between its first bucket's all-reduce and the split first layer's
        # (Note [Split last layer]); rank 0 goes on and waits for all-reduces rank 1 never posts
        import flambeau_autograd as autograd
        from flambeau_distributed import parallel

        parallel._SPLIT_MIN_BYTES, parallel._SPLIT_BLOCK_BYTES = 1024, 512

        class Boom(autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                if r == 1 and step == 1:
                    raise ValueError("rank 1's backward fails on purpose")
                return g

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(20, 32)
                self.fc2 = nn.Linear(32, 5)

            def forward(self, x):
                return self.fc2(Boom.apply(nn.functional.relu(self.fc1(x))))

        model = dist.DistributedDataParallel(Net(), bucket_cap_mb=0.0001)
        assert model._split_layer is model.module.fc1
        for step in range(2):
            model(fc.ones([4, 20])).sum().backward()
            print(f"rank {r}: step {step} done", flush=True)
        time.sleep(60)
    elif mode == "mismatch":
        shape = [3] if r == 0 else [4]
        msg = expect(
            FlambeauError,
            ["[all_reduce]", "rank 1", "rank 0 has all_reduce(float32 [3]", "rank 1 has all_reduce(float32 [4]"],
            lambda: dist.all_reduce(fc.ones(shape)),
        )
        print(f"rank {r}: {msg}", flush=True)
        dtype = fc.float32 if r == 0 else fc.float64
        expect(
            TypeError, ["[broadcast]", "rank 1", "float64"], lambda: dist.broadcast(fc.ones([2], dtype=dtype), src=0)
        )
        expect(
            FlambeauError,
            ["[all_reduce]", "rank 1", "op=MAX"],
            lambda: dist.all_reduce(fc.ones([2]), op="SUM" if r == 0 else "MAX"),
        )
        expect(FlambeauError, ["[broadcast]", "src="], lambda: dist.broadcast(fc.ones([2]), src=r))
        expect(
            FlambeauError,
            ["[all_gather]", "rank 1"],
            lambda: dist.all_gather([fc.zeros([r + 1])] * 2, fc.zeros([r + 1])),
        )
        work = dist.all_reduce(fc.ones([r + 2]), async_op=True)
        expect(FlambeauError, ["[all_reduce]", "rank 1"], work.wait)
        assert work.is_completed() and not work.is_success() and work.exception() is not None
        # nothing moved: the group still works
        t = fc.ones([3])
        dist.all_reduce(t)
        assert t.tolist() == [2.0, 2.0, 2.0]
        # point to point: the receiver names the sender
        if r == 0:
            dist.send(fc.ones([5]), dst=1)
            dist.send(fc.ones([2]), dst=1)
        else:
            expect(
                FlambeauError,
                ["[recv]", "rank 0 sent more than 12 bytes", "shape [3]"],
                lambda: dist.recv(fc.zeros([3]), src=0),
            )
            expect(FlambeauError, ["[recv]", "rank 0 sent 8 bytes"], lambda: dist.recv(fc.zeros([3]), src=0))
        # local argument errors
        expect(ValueError, ["[broadcast]", "src must be a rank in [0, 1]"], lambda: dist.broadcast(fc.ones([1]), src=2))
        expect(ValueError, ["[all_reduce]", "unknown reduce op"], lambda: dist.all_reduce(fc.ones([1]), op="MEAN"))
        expect(
            TypeError,
            ["[all_reduce]", "AVG", "int64"],
            lambda: dist.all_reduce(fc.ones([1], dtype=fc.int64), op=dist.ReduceOp.AVG),
        )
        expect(TypeError, ["[all_reduce]", "expected a Tensor"], lambda: dist.all_reduce([1.0]))
        expect(ValueError, ["[all_gather]", "world_size=2"], lambda: dist.all_gather([fc.zeros([1])], fc.zeros([1])))
        expect(
            FlambeauError,
            ["[all_gather]", "tensor_list[1]", "shape"],
            lambda: dist.all_gather([fc.zeros([1]), fc.zeros([2])], fc.zeros([1])),
        )
        expect(RuntimeError, ["twice"], lambda: dist.init_process_group("mpi"))
        expect(ValueError, ["backend 'nccl'"], lambda: dist.init_process_group("nccl"))
        # the new collectives go through the same cross-rank check
        expect(
            FlambeauError,
            ["[gather]", "rank 1 called it with arguments that differ", "gather(float32 [3]"],
            lambda: dist.gather(fc.zeros([2 + r]), [fc.zeros([2])] * 2 if r == 0 else None, dst=0),
        )
        expect(
            TypeError,
            ["[all_to_all_single]", "differ from rank 0's"],
            lambda: dist.all_to_all_single(
                fc.zeros([2], dtype=fc.float32 if r == 0 else fc.float64),
                fc.zeros([2], dtype=fc.float32 if r == 0 else fc.float64),
            ),
        )
        # DDP over modules that differ
        net = nn.Linear(3, 4 if r == 0 else 5)
        expect(
            FlambeauError, ["[DistributedDataParallel]", "rank 1", "weight"], lambda: dist.DistributedDataParallel(net)
        )
        expect(ValueError, ["device_ids"], lambda: dist.DistributedDataParallel(nn.Linear(2, 2), device_ids=[0]))
        dist.barrier()
        print(f"rank {r}: errors OK", flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
