"""docs/distributed.md's example: DistributedSampler + DataLoader + DistributedDataParallel (mpirun -n 2)."""

import flambeau_core as fc
import flambeau_data as data
import flambeau_distributed as dist
import flambeau_nn as nn


def main():
    dist.init_process_group(backend="mpi")
    rank = dist.get_rank()
    fc.manual_seed(0)
    x = fc.randn([256, 10])
    y = (x.sum(1) > 0).to(fc.int64)
    dataset = data.TensorDataset(x, y)
    sampler = dist.DistributedSampler(dataset, shuffle=True, seed=1)
    loader = data.DataLoader(dataset, batch_size=32, sampler=sampler)
    fc.manual_seed(100 + rank)  # different replicas: DDP copies rank 0's
    model = dist.DistributedDataParallel(nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    flat = fc.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [fc.zeros_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    assert gathered[0].tolist() == gathered[1].tolist()
    print(f"rank {rank}: replicas identical", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
