"""Forward-forward training (Hinton, 2022): each layer learns from a local loss, no backpropagation between layers.

A plain PyTorch script in the shape of the forward-forward example. The label is
written into the first inputs of a sample; a layer's "goodness" (mean square
activation) is pushed above a threshold for samples with the right label and
below it for a wrong one. Each layer normalises its input to unit length
(`torch.norm`) so only the direction of the previous activations passes on,
and trains on its own with its own optimizer, its output detached for the next
layer. Prediction picks the label of highest total goodness. Synthetic data,
fixed weights: the run is deterministic. Prints one JSON line: every layer's
loss per epoch and the train and test accuracy.
"""

import json
import math

import torch
import torch.nn as nn
from torch.optim import Adam

CLASSES, DIM = 4, 16


def dataset(n: int, offset: int):
    k = torch.arange(n * DIM, dtype=torch.float32).view(n, DIM) + offset
    labels = (torch.arange(n) + offset) % CLASSES
    prototypes = torch.cos(torch.arange(CLASSES * DIM, dtype=torch.float32).view(CLASSES, DIM) * 0.9) + 0.5
    return prototypes[labels] + 0.3 * torch.sin(k * 4.77), labels


def overlay_y_on_x(x, y):
    """The first CLASSES inputs replaced by the one-hot label (scaled to the inputs' maximum)."""
    x_ = x.clone()
    x_[:, :CLASSES] *= 0.0
    x_[torch.arange(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__(in_features, out_features)
        self.relu = nn.ReLU()
        self.opt = Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0
        self.num_epochs = 40

    def forward(self, x):
        x_direction = x / (torch.norm(x, p=2, dim=1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train_layer(self, x_pos, x_neg):
        losses = []
        for _ in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # softplus of (threshold - g_pos) and (g_neg - threshold), written out as log(1 + exp(.))
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach(), losses


class Net(nn.Module):
    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Layer(dims[d], dims[d + 1]) for d in range(len(dims) - 1)])

    def predict(self, x):
        goodness_per_label = []
        for label in range(CLASSES):
            h = overlay_y_on_x(x, torch.full((x.shape[0],), label, dtype=torch.long))
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness += [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        return torch.cat(goodness_per_label, 1).argmax(1)

    def train_net(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        all_losses = []
        for layer in self.layers:
            h_pos, h_neg, losses = layer.train_layer(h_pos, h_neg)
            all_losses.append(losses)
        return all_losses


def deterministic_(model: nn.Module) -> None:
    with torch.no_grad():
        for i, (_name, p) in enumerate(model.named_parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float32)
            p.copy_((torch.sin(ramp * 0.77 + i) * 1.5 / math.sqrt(p.shape[-1])).reshape(p.shape))


def main() -> None:
    x, y = dataset(128, 0)
    x_test, y_test = dataset(64, 10_000)
    net = Net([DIM, 64, 64])
    deterministic_(net)
    x_pos = overlay_y_on_x(x, y)
    x_neg = overlay_y_on_x(x, (y + 1 + torch.arange(len(y)) % (CLASSES - 1)) % CLASSES)  # a wrong label each
    losses = net.train_net(x_pos, x_neg)
    with torch.no_grad():
        train_accuracy = net.predict(x).eq(y).float().mean().item()
        test_accuracy = net.predict(x_test).eq(y_test).float().mean().item()
    print(json.dumps({"losses": losses, "train_accuracy": train_accuracy, "test_accuracy": test_accuracy}))


if __name__ == "__main__":
    main()
