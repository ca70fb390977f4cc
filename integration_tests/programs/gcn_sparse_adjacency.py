"""A two-layer graph convolution network (Kipf & Welling) with a sparse normalized adjacency.

A synthetic graph of two communities (dense inside, a few edges across); node
features are noisy hints of the community, half the nodes are labelled.
A plain PyTorch script; prints one JSON line: the loss of every step and the
accuracy on the unlabelled nodes.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def make_graph(n: int = 40):
    edges = []
    for i in range(n):
        for j in range(i + 1, n):
            same = (i < n // 2) == (j < n // 2)
            if (same and (i * 7 + j * 3) % 5 == 0) or (not same and (i + j) % 17 == 0):
                edges += [(i, j), (j, i)]
    edges += [(i, i) for i in range(n)]  # self loops
    index = torch.tensor(edges, dtype=torch.long).t()
    ones = torch.ones(index.size(1))
    degree = torch.sparse.sum(torch.sparse_coo_tensor(index, ones, (n, n)), dim=1).to_dense()
    norm = degree.pow(-0.5)
    weights = norm[index[0]] * norm[index[1]]  # D^-1/2 (A + I) D^-1/2
    adjacency = torch.sparse_coo_tensor(index, weights, (n, n)).coalesce()
    labels = (torch.arange(n) >= n // 2).long()
    t = torch.arange(n * 6, dtype=torch.float32).reshape(n, 6)
    features = torch.sin(t * 0.7) * 0.8 + (labels.float().unsqueeze(1) - 0.5) * torch.cos(t * 0.3)
    return adjacency, features, labels


class GraphConvolution(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        with torch.no_grad():
            ramp = torch.arange(in_features * out_features, dtype=torch.float32)
            self.weight.copy_(torch.sin(ramp * 0.61).reshape(in_features, out_features) / math.sqrt(in_features))

    def forward(self, x, adjacency):
        return torch.sparse.mm(adjacency, x @ self.weight) + self.bias


class GCN(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.gc1 = GraphConvolution(features, hidden)
        self.gc2 = GraphConvolution(hidden, classes)

    def forward(self, x, adjacency):
        return F.log_softmax(self.gc2(F.relu(self.gc1(x, adjacency)), adjacency), dim=1)


def main() -> None:
    adjacency, features, labels = make_graph()
    train_mask = torch.arange(len(labels)) % 2 == 0
    model = GCN(features.size(1), 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    losses = []
    for _step in range(30):
        model.train()
        optimizer.zero_grad()
        out = model(features, adjacency)
        loss = F.nll_loss(out[train_mask], labels[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        predicted = model(features, adjacency).argmax(1)
    accuracy = (predicted[~train_mask] == labels[~train_mask]).float().mean().item()
    print(json.dumps({"losses": losses, "accuracy": accuracy, "nnz": adjacency._nnz()}))


if __name__ == "__main__":
    main()
