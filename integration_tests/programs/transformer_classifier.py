"""A Transformer encoder classifying token sequences, with a custom Dataset, loader workers and a custom Function.

The task: does a sequence of tokens contain more 1s than 2s. A map-style
Dataset built on the fly, a DataLoader with 2 worker processes, a
`torch.autograd.Function` (a gradient-scaling identity on the embeddings),
AdamW with CosineAnnealingLR and gradient clipping. Dropout is off and the
weights start from fixed values, so the run is deterministic. A plain
PyTorch script; prints one JSON line: the loss of every step, the learning
rates and the accuracy.
"""

import json
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

SEQ, VOCAB, N = 10, 5, 192


class CountingDataset(Dataset):
    def __init__(self, n: int, offset: int) -> None:
        k = torch.arange(n * SEQ).reshape(n, SEQ) + offset
        self.tokens = ((k * 7 + (k // 3) * 5 + (k // 11)) % VOCAB).long()
        self.labels = ((self.tokens == 1).sum(1) > (self.tokens == 2).sum(1)).long()

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        return self.tokens[i], self.labels[i]


class ScaleGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


class Classifier(nn.Module):
    def __init__(self, d_model: int = 16) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, d_model)
        self.position = nn.Parameter(torch.zeros(1, SEQ, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, 2)

    def forward(self, tokens):
        x = ScaleGradient.apply(self.embedding(tokens), 0.5) + self.position
        return self.head(self.encoder(x).mean(dim=1))


def deterministic_(model: nn.Module) -> None:
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float32)
            if name.endswith("bias") or "norm" in name:
                p.copy_(torch.ones_like(p) if name.endswith("weight") else torch.zeros_like(p))
            else:
                p.copy_((torch.sin(ramp * 0.93 + i) / math.sqrt(p.shape[-1])).reshape(p.shape))


def main() -> None:
    train_set, test_set = CountingDataset(N, offset=0), CountingDataset(96, offset=50_000)
    loader = DataLoader(train_set, batch_size=32, shuffle=False, num_workers=2)
    model = Classifier()
    deterministic_(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6)
    losses, lrs = [], []
    for _epoch in range(6):
        model.train()
        for tokens, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(tokens), labels)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
        scheduler.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(test_set.tokens).argmax(1) == test_set.labels).float().mean().item()
    print(json.dumps({"losses": losses, "lrs": lrs, "accuracy": accuracy}))


if __name__ == "__main__":
    main()
