"""Rank program: DistributedDataParallel against one process on the combined batch (run under mpirun -n 2)."""

import sys

import flambeau_autograd as autograd
import flambeau_core as fc
import flambeau_distributed as dist
import flambeau_nn as nn
import numpy as np
from flambeau_core import FlambeauError
from flambeau_distributed import DistributedDataParallel as DDP
from flambeau_distributed.algorithms.ddp_comm_hooks import default_hooks
from flambeau_distributed.futures import Future


class Net(nn.Module):
    def __init__(self, unused=False):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 5)
        self.register_buffer("seen", fc.zeros([3]))
        if unused:
            self.extra = nn.Linear(5, 5)

    def forward(self, x):
        return self.fc3(nn.functional.relu(self.fc2(nn.functional.relu(self.fc1(x)))))


def values(module):
    return {k: np.asarray(v.detach().tolist()) for k, v in module.state_dict().items()}


def assert_same(a, b, rtol=1e-5, atol=1e-6):
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol, err_msg=k)


def data(step, n):
    g = np.random.default_rng(1000 + step)
    x = g.standard_normal((n, 20)).astype(np.float32)
    y = g.integers(0, 5, n)
    return fc.tensor(x.tolist()), fc.tensor(y.tolist(), dtype=fc.int64)


def train(rank, world, hook=None, rtol=1e-5, atol=1e-6, **ddp_kwargs):
    fc.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
    net = Net()
    with autograd.no_grad():
        net.seen.copy_(fc.full([3], float(rank)))
    model = DDP(net, **ddp_kwargs)
    if hook is not None:
        model.register_comm_hook(None, hook)
    start = values(net)
    every = [None] * world
    dist.all_gather_object(every, start)
    assert_same(every[0], every[1], rtol=0, atol=0)  # identical after construction
    assert start["seen"].tolist() == [0.0, 0.0, 0.0]

    ref = Net()
    ref.load_state_dict({k: fc.tensor(v.tolist()) for k, v in start.items()})
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = nn.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    per = 8
    for step in range(5):
        x, y = data(step, per * world)
        mine = slice(rank * per, (rank + 1) * per)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[mine]), y[mine]).backward()
        opt.step()
        ref_opt.zero_grad()
        nn.functional.cross_entropy(ref(x), y).backward()
        ref_opt.step()
        assert_same(values(net), values(ref), rtol=rtol, atol=atol)
    return model


def expect_error(kind, words, fn):
    try:
        fn()
    except kind as e:
        assert all(w in str(e) for w in words), str(e)
    else:
        raise AssertionError(f"no {kind.__name__} raised")


def comm_hooks(rank, world):
    # the default hooks give what one process gives on the combined batch (the compressed ones within
    # their rounding), with one bucket and with several launched during backward
    for cap in (None, 0.001):
        train(rank, world, hook=default_hooks.allreduce_hook, bucket_cap_mb=cap)
        train(rank, world, hook=default_hooks.fp16_compress_hook, bucket_cap_mb=cap, rtol=1e-2, atol=2e-3)
        train(rank, world, hook=default_hooks.bf16_compress_hook, bucket_cap_mb=cap, rtol=5e-2, atol=2e-2)

    # the bucket a hook sees, and a Future resolved by hand (local gradients: no communication)
    seen = []

    def local(state, bucket):
        state.append((bucket.index(), bucket.is_last(), [tuple(g.shape) for g in bucket.gradients()]))
        assert bucket.buffer().numel() == sum(p.numel() for p in bucket.parameters())
        fut = Future()
        fut.set_result(bucket.buffer() * 0 + 1)
        return fut

    net = Net()
    model = DDP(net, bucket_cap_mb=0.001)
    model.register_comm_hook(seen, local)
    x, y = data(0, 4)
    nn.functional.cross_entropy(model(x), y).backward()
    assert [s[:2] for s in seen] == [(0, False), (1, True)], seen
    assert seen[0][2] == [(5,), (5, 16), (16,), (16, 32)], seen
    assert np.all(np.asarray(net.fc1.weight.grad.tolist()) == 1.0)
    expect_error(RuntimeError, ["already registered"], lambda: model.register_comm_hook(None, local))

    # errors: not a Future, a Future of the wrong size, a parameter changing shape
    model = DDP(Net())
    model.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    expect_error(
        TypeError, ["must return a Future", "Tensor"], lambda: nn.functional.cross_entropy(model(x), y).backward()
    )

    def short(state, bucket):
        fut = Future()
        fut.set_result(bucket.buffer()[:3])
        return fut

    model = DDP(Net())
    model.register_comm_hook(None, short)
    expect_error(FlambeauError, ["holds [3]", "expected"], lambda: nn.functional.cross_entropy(model(x), y).backward())
    expect_error(TypeError, ["must be callable"], lambda: DDP(Net()).register_comm_hook(None, 3))


def uneven_inputs(rank, world):
    # rank r has 3 + 2r batches; a joined rank contributes zero gradients, divided by the initial world size
    # (or by the ranks still training), and every rank ends with the last joiner's model
    from flambeau_distributed.algorithms import Join

    for divide_by_initial in (True, False):
        net = Net()
        model = DDP(net, bucket_cap_mb=0.001)
        ref = Net()
        ref.load_state_dict(net.state_dict())
        opt = nn.optim.SGD(model.parameters(), lr=0.1)
        ref_opt = nn.optim.SGD(ref.parameters(), lr=0.1)
        per = 4
        with Join([model], divide_by_initial_world_size=divide_by_initial):
            for step in range(3 + 2 * rank):
                x, y = data(70 + step, per * world)
                opt.zero_grad()
                nn.functional.cross_entropy(
                    model(x[rank * per : (rank + 1) * per]), y[rank * per : (rank + 1) * per]
                ).backward()
                opt.step()
        for step in range(5):
            x, y = data(70 + step, per * world)
            ref_opt.zero_grad()
            if step < 3:
                loss = nn.functional.cross_entropy(ref(x), y)
            else:  # only rank 1 still trains
                loss = nn.functional.cross_entropy(ref(x[per:]), y[per:]) * (0.5 if divide_by_initial else 1.0)
            loss.backward()
            ref_opt.step()
        assert_same(values(net), values(ref))

    # throw_on_early_termination: every rank raises once one ran out
    model = DDP(Net())
    try:
        with Join([model], throw_on_early_termination=True):
            for step in range(1 + 2 * rank):
                x, y = data(step, 4)
                nn.functional.cross_entropy(model(x), y).backward()
    except RuntimeError as e:
        assert "exhausted" in str(e), str(e)
    else:
        raise AssertionError("Join(throw_on_early_termination=True) did not raise")
    expect_error(TypeError, ["[Join]", "Joinable"], lambda: Join([Net()]))


def no_sync(rank, world):
    net = Net()
    model = DDP(net, bucket_cap_mb=0.001)
    ref = Net()
    ref.load_state_dict(net.state_dict())
    per = 6
    for p in list(model.parameters()) + list(ref.parameters()):
        p.grad = None
    for step in range(3):
        x, y = data(50 + step, per * world)
        mine = slice(rank * per, (rank + 1) * per)
        if step < 2:
            with model.no_sync():
                loss = nn.functional.cross_entropy(model(x[mine]), y[mine])
            loss.backward()
            # local accumulation only: the ranks' grads differ
            grads = [None] * world
            dist.all_gather_object(grads, net.fc1.weight.grad.tolist())
            assert not np.allclose(grads[0], grads[1])
        else:
            nn.functional.cross_entropy(model(x[mine]), y[mine]).backward()
        nn.functional.cross_entropy(ref(x), y).backward()
    # after the synchronised step: the average over ranks of the locally accumulated sums
    for (name, p), q in zip(net.named_parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(
            np.asarray(p.grad.tolist()), np.asarray(q.grad.tolist()), rtol=1e-5, atol=1e-6, err_msg=name
        )


def unused(rank, world):
    net = Net(unused=True)
    model = DDP(net)
    x, y = data(0, 4)
    nn.functional.cross_entropy(model(x), y).backward()
    try:
        model(x)
    except RuntimeError as e:
        assert "Expected to have finished reduction" in str(e) and "extra.weight" in str(e), str(e)
    else:
        raise AssertionError("an unused parameter went unnoticed")
    net = Net(unused=True)
    model = DDP(net, find_unused_parameters=True)
    ref = Net(unused=True)
    ref.load_state_dict(net.state_dict())
    for step in range(2):
        x, y = data(step, 8)
        mine = slice(rank * 4, (rank + 1) * 4)
        model.zero_grad()
        ref.zero_grad()
        nn.functional.cross_entropy(model(x[mine]), y[mine]).backward()
        nn.functional.cross_entropy(ref(x), y).backward()
        np.testing.assert_allclose(
            np.asarray(net.fc1.weight.grad.tolist()), np.asarray(ref.fc1.weight.grad.tolist()), rtol=1e-5, atol=1e-6
        )
        assert net.extra.weight.grad is None or not np.any(np.asarray(net.extra.weight.grad.tolist()))


class Twice(nn.Module):
    """The first layer applied twice: its weight gradient sums two uses (not split)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 20)
        self.fc2 = nn.Linear(20, 5)

    def forward(self, x):
        return self.fc2(nn.functional.relu(self.fc1(nn.functional.relu(self.fc1(x)))))


class Tied(Net):
    """fc1's weight also used outside fc1, in the forward."""

    def forward(self, x):
        return super().forward(x) + (x @ self.fc1.weight.t())[:, 5:10] * 0.1


class TiedLinear(Net):
    """fc1's weight also used through F.linear, after fc1."""

    def forward(self, x):
        h = nn.functional.relu(self.fc1(x))
        out = self.fc3(nn.functional.relu(self.fc2(h)))
        return out + nn.functional.linear(x, self.fc1.weight)[:, :5] * 0.1


def penalty(net, rank, step):
    """A loss term on fc1's weight outside the forward, on rank 0 only and from step 1 on (0 otherwise)."""
    if rank != 0 or step < 1:
        return None
    return (net.fc1.weight * net.fc1.weight).sum() * 0.05


def assert_same_grads(net, ref):
    for (name, p), q in zip(net.named_parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(
            np.asarray(p.grad.tolist()), np.asarray(q.grad.tolist()), rtol=1e-5, atol=1e-6, err_msg=name
        )


def one_step(rank, model, ref, seed):
    """One backward of DDP on this rank's 4 samples against one process on the 8 of both ranks."""
    x, y = data(seed, 8)
    nn.functional.cross_entropy(model(x[rank * 4 : rank * 4 + 4]), y[rank * 4 : rank * 4 + 4]).backward()
    nn.functional.cross_entropy(ref(x), y).backward()
    assert_same_grads(model.module, ref)


def outside_use(rank, world, cls, penalize=False, accumulate=False, **ddp_kwargs):
    # the split weight also gets a gradient from outside its layer: one process's results on every step, and
    # the layer is not split any more once that was seen (every rank decides the same)
    fc.manual_seed(0)
    net = cls()
    model = DDP(net, **ddp_kwargs)
    assert model._split_layer is net.fc1
    ref = cls()
    ref.load_state_dict(net.state_dict())
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = nn.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    per = 4
    for step in range(4):
        x, y = data(60 + step, per * world)
        mine = slice(rank * per, (rank + 1) * per)
        if not accumulate or step % 2 == 0:
            opt.zero_grad()
            ref_opt.zero_grad()
        split = model._split_layer is not None
        loss = nn.functional.cross_entropy(model(x[mine]), y[mine])
        extra = penalty(net, rank, step) if penalize else None
        (loss if extra is None else loss + extra).backward()
        ref_loss = nn.functional.cross_entropy(ref(x), y)
        for r in range(world):
            extra = penalty(ref, r, step) if penalize else None
            if extra is not None:
                ref_loss = ref_loss + extra / world
        ref_loss.backward()
        # fc1.weight's row blocks posted during backward while it was split
        assert model._post_log.count((140, 1)) == (4 if split else 0), (step, model._post_log)
        assert_same_grads(net, ref)
        if not accumulate or step % 2 == 1:
            opt.step()
            ref_opt.step()
        assert_same(values(net), values(ref))
        # split while no rank had seen an outside part; never again after
        assert (model._split_layer is None) == (step >= (1 if penalize else 0)), (step, model._split_layer)


def split_last_layer(rank, world):
    # the first layer's weight gradient computed by row blocks, each all-reduced once done: thresholds
    # small enough for the test model (fc1.weight, 32 x 20 float32, in 5 blocks of 7 rows)
    from flambeau_distributed import parallel

    saved = parallel._SPLIT_MIN_BYTES, parallel._SPLIT_BLOCK_BYTES
    parallel._SPLIT_MIN_BYTES, parallel._SPLIT_BLOCK_BYTES = 1024, 512
    try:
        for kwargs in ({}, {"bucket_cap_mb": 0.001}, {"bucket_cap_mb": 0.001, "gradient_as_bucket_view": True}):
            model = train(rank, world, **kwargs)
            assert model._split_layer is model.module.fc1
            # 5 row blocks of fc1.weight (4 posted while blocks remained to compute), then the rest of its
            # bucket (fc1.bias, and with one bucket the other layers' gradients in front of it)
            # (and the flag saying whether some rank's fc1.weight got a gradient from outside fc1)
            rest = model._buckets[-1].flat.numel() - 640 + 1
            assert model._post_log[-6:] == [(140, 1)] * 4 + [(80, 0), (rest, 0)], model._post_log
            assert model.module.fc1.weight.grad.shape == (32, 20)
        # the split gradient joins a locally accumulated one (no_sync), as the unsplit one does
        no_sync(rank, world)
        # a communication hook gets whole buckets: no split; the hooks still give one process's results
        model = train(rank, world, hook=default_hooks.allreduce_hook, bucket_cap_mb=0.001)
        assert model._post_log == [], model._post_log
        train(rank, world, hook=default_hooks.bf16_compress_hook, rtol=5e-2, atol=2e-2)
        train(rank, world, hook=default_hooks.fp16_compress_hook, bucket_cap_mb=0.001, rtol=1e-2, atol=2e-3)
        # Join: the joined ranks shadow whole buckets, so no split either
        uneven_inputs(rank, world)

        # a layer called twice: its two uses' gradients sum in autograd, then the bucket as usual
        fc.manual_seed(0)
        net = Twice()
        model = DDP(net)
        assert model._split_layer is net.fc1
        ref = Twice()
        ref.load_state_dict(net.state_dict())
        one_step(rank, model, ref, 7)
        assert all(n != 140 for n, _ in model._post_log), model._post_log

        # the weight used outside its layer (in the forward, or a loss term on one rank): one process's results
        for cls, penalize in ((Tied, False), (TiedLinear, False), (Net, True)):
            for view in (False, True):
                for accumulate in (False, True):
                    outside_use(rank, world, cls, penalize, accumulate, gradient_as_bucket_view=view)
        outside_use(rank, world, Tied, bucket_cap_mb=0.001)
        # one rank computes the weight's gradient whole (its backward did not split): it posts the same row
        # blocks once the bucket is ready, so the collectives match; with and without an outside use
        for cls in (Net, Tied):
            fc.manual_seed(0)
            net = cls()
            model = DDP(net)
            if rank == 1:
                object.__setattr__(model, "_split_weight_grad", lambda g, x: False)
            ref = cls()
            ref.load_state_dict(net.state_dict())
            one_step(rank, model, ref, 11)
            assert [n for n, _ in model._post_log[:5]] == [140] * 4 + [80], model._post_log
            assert model._post_log.count((140, 1)) == (4 if rank == 0 else 0), model._post_log
            assert (model._split_layer is None) == (cls is Tied), model._split_layer
        # backward(create_graph=True): the weight's gradient is computed whole with its graph, as every other
        # parameter's, and its row blocks are posted once the bucket is ready
        fc.manual_seed(0)
        net = Net()
        model = DDP(net)
        ref = Net()
        ref.load_state_dict(net.state_dict())
        x, y = data(13, 8)
        nn.functional.cross_entropy(model(x[rank * 4 : rank * 4 + 4]), y[rank * 4 : rank * 4 + 4]).backward(
            create_graph=True
        )
        nn.functional.cross_entropy(ref(x), y).backward(create_graph=True)
        assert_same_grads(net, ref)
        assert [p.grad.requires_grad for p in net.parameters()] == [q.grad.requires_grad for q in ref.parameters()]
        assert model._post_log.count((140, 1)) == 0 and model._post_log.count((140, 0)) == 4, model._post_log
        assert model._split_layer is net.fc1
        # a post-accumulate-grad hook on the split weight registered before DDP's own (an optimizer in backward)
        # reads its .grad while the row blocks are in flight: zeros, not the uninitialised memory the split
        # otherwise leaves there for DDP's hook to replace
        fc.manual_seed(0)
        net = Net()
        seen = []
        net.fc1.weight.register_post_accumulate_grad_hook(
            lambda p: seen.append(None if p.grad is None else float(p.grad.abs().sum()))
        )
        model = DDP(net)
        for step in range(3):
            x, y = data(30 + step, 8)
            nn.functional.cross_entropy(model(x[rank * 4 : rank * 4 + 4]), y[rank * 4 : rank * 4 + 4]).backward()
            assert model._post_log.count((140, 1)) == 4, model._post_log  # split
            net.zero_grad(set_to_none=True)
        assert seen == [0.0] * 3, seen
        # split_first_layer=False: no row blocks
        model = train(rank, world, split_first_layer=False)
        assert model._split_layer is None
        assert all(n != 140 for n, _ in model._post_log), model._post_log
    finally:
        parallel._SPLIT_MIN_BYTES, parallel._SPLIT_BLOCK_BYTES = saved


def layout(model):
    """The buckets as lists of parameter names, and the cap (bytes)."""
    return [[model._param_names[i] for i in b.params] for b in model._buckets], model.bucket_bytes_cap


def bucket_layout(rank, world):
    # without bucket_cap_mb the cap is the gradients' bytes / 8, within [256 KB, 25 MB]; the first bucket closes
    # at min(1 MB, cap); a bucket closes once it reaches its cap (a parameter is never cut), last registered first
    kb, mb = 1024, 1024 * 1024
    fc.manual_seed(0)
    # small MLP: 1285 floats, cap 256 KB: one bucket
    buckets, cap = layout(DDP(Net()))
    assert cap == 256 * kb, cap
    assert buckets == [["fc3.bias", "fc3.weight", "fc2.bias", "fc2.weight", "fc1.bias", "fc1.weight"]], buckets
    # the bench's MLP 784-512-512-10: 2,678,824 bytes, cap 334,853: fc3 + fc2 reach it with fc2.weight
    net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    buckets, cap = layout(DDP(net))
    assert cap == -(-(4 * (784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10)) // 8) == 334853, cap
    assert buckets == [["4.bias", "4.weight", "2.bias", "2.weight"], ["0.bias", "0.weight"]], buckets
    # many small parameters: 64 Linear(64, 64), 16,640 bytes a layer, 1,064,960 in all: cap 256 KB (the floor),
    # reached by 16 layers (266,240 bytes; 15 layers and a bias: 249,856), so 4 buckets of 16 layers
    net = nn.Sequential(*[nn.Linear(64, 64) for _ in range(64)])
    buckets, cap = layout(DDP(net))
    assert cap == 256 * kb, cap
    expected = [[f"{k}.{w}" for k in range(63 - 16 * j, 47 - 16 * j, -1) for w in ("bias", "weight")] for j in range(4)]
    assert buckets == expected, buckets
    # one huge parameter: Linear(4096, 2048)'s 32 MB weight is never cut: one bucket with everything
    net = nn.Sequential(nn.Linear(4096, 2048), nn.ReLU(), nn.Linear(2048, 10))
    buckets, cap = layout(DDP(net))
    assert cap == -(-(4 * (4096 * 2048 + 2048 + 2048 * 10 + 10)) // 8), cap
    assert buckets == [["2.bias", "2.weight", "0.bias", "0.weight"]], buckets
    # 12 Linear(1024, 1024): 4,198,400 bytes a layer, 50,380,800 in all, cap 6,297,600: the first bucket
    # (1 MB) closes with the last layer, the others hold 2 layers each (one layer and a bias: 4,202,496)
    net = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(12)])
    buckets, cap = layout(DDP(net))
    assert cap == 6297600, cap
    names = [f"{k}.{w}" for k in range(11, -1, -1) for w in ("bias", "weight")]
    assert buckets == [names[:2]] + [names[k : k + 4] for k in range(2, 24, 4)], buckets
    # with bucket_cap_mb, as PyTorch: 25 MB buckets (the first 1 MB): the last layer, 6 layers (25,190,400 bytes
    # and the 7th's bias: below 25 MB) and the 7th's weight, then the other 4
    buckets, cap = layout(DDP(net, bucket_cap_mb=25))
    assert cap == 25 * mb, cap
    assert buckets == [names[:2], names[2:16], names[16:]], buckets
    # a dtype change closes a bucket
    net = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8).double())
    buckets, cap = layout(DDP(net))
    assert buckets == [["1.bias", "1.weight"], ["0.bias", "0.weight"]], buckets


def fresh_gradients(rank, world):
    """A .grad that backward made (None before) becomes a view of its bucket, with nothing copied out; one that
    existed (accumulation without zero_grad) keeps its storage and gets the average; both equal one process."""
    fc.manual_seed(0)
    net = Net()
    model = DDP(net)
    ref = Net()
    ref.load_state_dict(net.state_dict())
    per = 8
    x, y = data(21, per * world)
    mine = slice(rank * per, (rank + 1) * per)
    nn.functional.cross_entropy(model(x[mine]), y[mine]).backward()
    nn.functional.cross_entropy(ref(x), y).backward()
    flat = model._buckets[0].flat
    lo, hi = flat.data_ptr(), flat.data_ptr() + flat.numel() * 4
    for p in net.parameters():
        assert lo <= p.grad.data_ptr() < hi, "a .grad made by backward is a view of its bucket"
    held = [p.grad for p in net.parameters()]
    x, y = data(22, per * world)
    nn.functional.cross_entropy(model(x[mine]), y[mine]).backward()  # accumulates: no zero_grad
    nn.functional.cross_entropy(ref(x), y).backward()
    assert model._buckets[0].flat.data_ptr() != flat.data_ptr()  # a fresh bucket this iteration
    for h, p, q in zip(held, net.parameters(), ref.parameters(), strict=True):
        assert p.grad.data_ptr() == h.data_ptr(), "an existing .grad keeps its storage"
        np.testing.assert_allclose(np.asarray(h.tolist()), np.asarray(q.grad.tolist()), rtol=1e-5, atol=1e-6)


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = train(rank, world)
    assert len(model._buckets) == 1
    # several small buckets, launched while backward still runs
    model = train(rank, world, bucket_cap_mb=0.001)
    assert len(model._buckets) == 2, len(model._buckets)
    # bucket 0 (fc3, fc2) started while fc1's two gradients were still to be computed
    assert model._launch_log == [(0, 2), (1, 0)], model._launch_log
    train(rank, world, bucket_cap_mb=0.001, gradient_as_bucket_view=True)
    assert "module.fc1.weight" in model.state_dict()
    no_sync(rank, world)
    unused(rank, world)
    comm_hooks(rank, world)
    uneven_inputs(rank, world)
    split_last_layer(rank, world)
    fresh_gradients(rank, world)
    bucket_layout(rank, world)
    dist.destroy_process_group()
    print(f"rank {rank}: ddp OK", flush=True)


if __name__ == "__main__":
    sys.exit(main())
