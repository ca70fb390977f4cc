"""One benchmark run (launched by bench_ddp.py): MLP 784-512-512-10 training, flambeau or PyTorch, 1 process or DDP.

python _ddp_worker.py {fb,torch} {single,ddp} BATCH STEPS THREADS    (ddp: under mpirun -n 2)
Prints one JSON line (rank 0): seconds per step and, for flambeau's DDP, the all-reduce statistics.
"""

import json
import os
import sys
import time

import numpy as np

WARMUP = 5


def data(rank, batch, steps):
    g = np.random.default_rng(rank)
    xs = g.standard_normal((steps + WARMUP, batch, 784)).astype(np.float32)
    ys = g.integers(0, 10, (steps + WARMUP, batch)).astype(np.int64)
    return xs, ys


def run_flambeau(mode, batch, steps, threads):
    import flambeau as fb

    fb.set_num_threads(threads)
    rank = 0
    if mode == "ddp":
        fb.distributed.init_process_group("mpi")
        rank = fb.distributed.get_rank()
    xs, ys = data(rank, batch, steps)
    xs = [fb.from_numpy(x) for x in xs]
    ys = [fb.from_numpy(y) for y in ys]
    fb.manual_seed(0)
    net = fb.nn.Sequential(
        fb.nn.Linear(784, 512), fb.nn.ReLU(), fb.nn.Linear(512, 512), fb.nn.ReLU(), fb.nn.Linear(512, 10)
    )
    model = fb.nn.parallel.DistributedDataParallel(net) if mode == "ddp" else net
    opt = fb.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    out = {}
    for i in range(steps + WARMUP):
        if i == WARMUP:
            if mode == "ddp":
                fb.distributed.barrier()
                model._comm_stats.update(iterations=0, allreduce_s=0.0, exposed_s=0.0)
            start = time.perf_counter()
        opt.zero_grad()
        fb.nn.functional.cross_entropy(model(xs[i]), ys[i]).backward()
        opt.step()
    out["step_s"] = (time.perf_counter() - start) / steps
    if mode == "ddp":
        s = model._comm_stats
        out["allreduce_ms"] = 1e3 * s["allreduce_s"] / s["iterations"]
        out["exposed_ms"] = 1e3 * s["exposed_s"] / s["iterations"]
        out["buckets"] = len(model._buckets)
        # the bound on what can hide: the share of the gradient bytes whose all-reduce started while
        # backward still had gradients to compute (the last step's post log: buckets, and the row blocks
        # of the split first layer, Note [Split last layer])
        early = sum(n for n, remaining in model._post_log if remaining > 0)
        sizes = [b.flat.numel() for b in model._buckets]
        out["launched_in_backward_pct"] = 100 * early / sum(sizes)
        # the same buckets all-reduced back to back with nothing else running: what the all-reduce costs
        # when none of it hides (the honest yardstick for the exposed time)
        pg = fb.distributed._c10d._WORLD
        alone = []
        for _ in range(20):
            fb.distributed.barrier()
            t0 = time.perf_counter()
            for b in model._buckets:
                fb.distributed._c10d._all_reduce(pg, b.flat, fb.distributed.ReduceOp.SUM, False, False)
            alone.append(time.perf_counter() - t0)
        out["allreduce_alone_ms"] = 1e3 * sorted(alone)[len(alone) // 2]
        # Note [Metadata check]: the cost of the cross-rank check on a 1-element all_reduce
        t = fb.ones([1])
        for check in (True, False, True, False):
            pg.check = check
            fb.distributed.barrier()
            t0 = time.perf_counter()
            for _ in range(200):
                fb.distributed.all_reduce(t)
            out[f"small_allreduce_us_check_{'on' if check else 'off'}"] = 1e6 * (time.perf_counter() - t0) / 200
        fb.distributed.destroy_process_group()
    return rank, out


def run_torch(mode, batch, steps, threads):
    import torch
    import torch.distributed as tdist

    torch.set_num_threads(threads)
    rank = 0
    if mode == "ddp":
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", os.environ.get("BENCH_TORCH_PORT", "29533"))
        tdist.init_process_group("gloo", rank=rank, world_size=world)
    xs, ys = data(rank, batch, steps)
    xs = [torch.from_numpy(x) for x in xs]
    ys = [torch.from_numpy(y) for y in ys]
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    model = torch.nn.parallel.DistributedDataParallel(net) if mode == "ddp" else net
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for i in range(steps + WARMUP):
        if i == WARMUP:
            if mode == "ddp":
                tdist.barrier()
            start = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xs[i]), ys[i]).backward()
        opt.step()
    out = {"step_s": (time.perf_counter() - start) / steps}
    if mode == "ddp":
        tdist.destroy_process_group()
    return rank, out


def main():
    fw, mode, batch, steps, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    rank, out = (run_flambeau if fw == "fb" else run_torch)(mode, batch, steps, threads)
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
