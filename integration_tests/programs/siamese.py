"""A siamese embedding network trained with a contrastive loss on pairs and TripletMarginLoss on triplets.

A plain PyTorch script. Points of four classes (fixed centres plus a fixed,
noise-like offset) are embedded by one shared MLP; pairs are pulled together
or pushed past a margin by a contrastive loss on `F.pairwise_distance`, then
triplets are trained with `nn.TripletMarginLoss`. The weights start from fixed
values and the pairs and triplets are drawn from a fixed sequence, so the run
is deterministic. Prints one JSON line: the loss of every step and the
nearest-centroid accuracy in the embedding.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CLASSES, PER_CLASS, DIM = 4, 24, 6


def points():
    centres = torch.sin(torch.arange(CLASSES * DIM, dtype=torch.float32).view(CLASSES, DIM) * 2.1) * 1.5
    k = torch.arange(CLASSES * PER_CLASS * DIM, dtype=torch.float32).view(CLASSES * PER_CLASS, DIM)
    offsets = torch.sin(k * 7.31 + 0.2) * torch.cos(k * 3.17) * 1.2
    labels = torch.arange(CLASSES).repeat_interleave(PER_CLASS)
    return centres[labels] + offsets, labels


class EmbeddingNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(DIM, 32), nn.PReLU(), nn.Linear(32, 32), nn.PReLU(), nn.Linear(32, 2))

    def forward(self, x):
        return self.fc(x)


class SiameseNet(nn.Module):
    def __init__(self, embedding_net: nn.Module) -> None:
        super().__init__()
        self.embedding_net = embedding_net

    def forward(self, x1, x2):
        return self.embedding_net(x1), self.embedding_net(x2)


class ContrastiveLoss(nn.Module):
    """Similar pairs (target 1) pulled together, dissimilar ones pushed apart to at least `margin`."""

    def __init__(self, margin: float) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, output1, output2, target):
        distances = F.pairwise_distance(output1, output2)
        losses = target * distances.pow(2) + (1 - target) * F.relu(self.margin - distances).pow(2)
        return 0.5 * losses.mean()


def deterministic_(model: nn.Module) -> None:
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float32)
            if "fc.1" in name or "fc.3" in name:  # PReLU slopes keep their default
                continue
            scale = 0.1 if name.endswith("bias") else 1.0 / math.sqrt(p.shape[-1])
            p.copy_((torch.cos(ramp * 1.13 + i) * scale).reshape(p.shape))


def main() -> None:
    x, labels = points()
    n = len(labels)
    embedding_net = EmbeddingNet()
    deterministic_(embedding_net)
    model = SiameseNet(embedding_net)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    contrastive, triplet = ContrastiveLoss(margin=1.0), nn.TripletMarginLoss(margin=1.0, p=2)
    losses = []
    for step in range(60):
        k = torch.arange(32) + step * 32
        first, second = (k * 37) % n, (k * 53 + 11) % n
        if step < 30:
            target = (labels[first] == labels[second]).float()
            loss = contrastive(*model(x[first], x[second]), target)
        else:
            # Positives: another point of the anchor's class; negatives: a point of the next class.
            positive = labels[first] * PER_CLASS + (k * 5 + 3) % PER_CLASS
            negative = ((labels[first] + 1) % CLASSES) * PER_CLASS + (k * 7) % PER_CLASS
            anchor, pos = model(x[first], x[positive])
            loss = triplet(anchor, pos, embedding_net(x[negative]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        embedded = embedding_net(x)
        centroids = torch.stack([embedded[labels == c].mean(0) for c in range(CLASSES)])
        nearest = torch.cdist(embedded, centroids).argmin(1)
        accuracy = (nearest == labels).float().mean().item()
    print(json.dumps({"losses": losses, "accuracy": accuracy}))


if __name__ == "__main__":
    main()
