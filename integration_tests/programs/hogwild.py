"""Hogwild: two processes train one model in shared memory (PyTorch's mnist_hogwild pattern).

Spawn start method, `model.share_memory()`, `mp.Process(target=train, args=(model,))`.
A plain PyTorch script; prints one JSON line: the loss before and after, and
whether the parent's parameters changed.
"""

import json

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def make_data(rank: int, n: int = 128):
    t = torch.arange(n * 4, dtype=torch.float32).reshape(n, 4) + 1000 * rank
    x = torch.sin(t * 0.37)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
    return x, y


def train(rank: int, model: nn.Module, steps: int) -> None:
    x, y = make_data(rank)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()


def evaluate(model: nn.Module) -> float:
    x, y = make_data(rank=7)
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    model.share_memory()
    before = [p.detach().clone() for p in model.parameters()]
    loss_before = evaluate(model)
    ctx = mp.get_context("spawn")
    processes = [ctx.Process(target=train, args=(rank, model, 60)) for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    changed = all(bool((p.detach() != b).any()) for p, b in zip(model.parameters(), before, strict=True))
    print(
        json.dumps(
            {
                "loss_before": loss_before,
                "loss_after": evaluate(model),
                "changed": changed,
                "exitcodes": [p.exitcode for p in processes],
            }
        )
    )


if __name__ == "__main__":
    main()
