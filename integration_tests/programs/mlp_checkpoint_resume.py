"""An MLP classifier on synthetic data: train, checkpoint model and optimizer, reload, resume.

A plain PyTorch script (runs under `python` with torch, or `flambeau-run`).
Prints one JSON line: the loss of every step, before and after the reload, and
whether resuming from the checkpoint gave the same losses as training on.
Usage: mlp_checkpoint_resume.py CHECKPOINT_DIR
"""

import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def deterministic_(model: nn.Module) -> None:
    # The same starting weights in every run and framework (no RNG involved).
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((torch.sin(ramp * 0.77 + i) * (1.0 / math.sqrt(max(p.shape[-1], 1)))).reshape(p.shape))


def make_data(n: int = 256):
    t = torch.arange(n * 8, dtype=torch.float32).reshape(n, 8)
    x = torch.sin(t * 0.173) + 0.5 * torch.cos(t * 0.051)
    score = x[:, 0] * 1.5 - x[:, 3] + 0.7 * x[:, 5] * x[:, 6]
    y = (score > 0.3).long() + (score > -0.4).long()  # 3 classes
    return x, y


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.relu(self.fc1(x)))))


def train(model, optimizer, loader, epochs):
    losses = []
    model.train()
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def fresh():
    model = MLP()
    deterministic_(model)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def main() -> None:
    ckpt_dir = sys.argv[1]
    x, y = make_data()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=False)

    model, optimizer = fresh()
    first = train(model, optimizer, loader, epochs=2)
    path = os.path.join(ckpt_dir, "checkpoint.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 2}, path)
    straight_on = train(model, optimizer, loader, epochs=1)

    model2, optimizer2 = fresh()
    checkpoint = torch.load(path)
    model2.load_state_dict(checkpoint["model"])
    optimizer2.load_state_dict(checkpoint["optimizer"])
    resumed = train(model2, optimizer2, loader, epochs=1)

    model2.eval()
    with torch.no_grad():
        accuracy = (model2(x).argmax(dim=1) == y).float().mean().item()
    same = max(abs(a - b) for a, b in zip(straight_on, resumed, strict=True)) < 1e-6
    print(
        json.dumps(
            {"losses": first + resumed, "resume_matches": same, "epoch": checkpoint["epoch"], "accuracy": accuracy}
        )
    )


if __name__ == "__main__":
    main()
