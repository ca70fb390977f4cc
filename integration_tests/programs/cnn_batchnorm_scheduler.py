"""A small CNN with BatchNorm and Dropout, trained with Adam and a StepLR schedule.

Synthetic 1x12x12 images: a bright 3x3 square on a noisy background, the class
is the quadrant it lies in. A plain PyTorch script; prints one JSON line: the
loss of every epoch, the learning rate of every epoch and the test accuracy.
"""

import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


def make_images(n: int, offset: int):
    k = torch.arange(n) + offset
    rows = (k * 7) % 9
    cols = (k * 5 + k // 9) % 9
    background = 0.3 * torch.sin(torch.arange(n * 144, dtype=torch.float32).reshape(n, 1, 12, 12) * 0.91 + offset)
    images = background.clone()
    for i in range(n):  # building the dataset, not training: a loop is what a user writes
        r, c = int(rows[i]), int(cols[i])
        images[i, 0, r : r + 3, c : c + 3] += 1.5
    labels = (rows >= 5).long() * 2 + (cols >= 5).long()
    return images, labels


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.dropout = nn.Dropout(0.25)
        self.fc = nn.Linear(16 * 3 * 3, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.dropout(torch.flatten(x, 1)))


def main() -> None:
    torch.manual_seed(0)
    train_x, train_y = make_images(256, offset=0)
    test_x, test_y = make_images(128, offset=1000)
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=32, shuffle=True)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = StepLR(optimizer, step_size=3, gamma=0.5)
    epoch_losses, lrs = [], []
    for _epoch in range(8):
        model.train()
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(xb)
        lrs.append(scheduler.get_last_lr()[0])
        scheduler.step()
        epoch_losses.append(total / len(train_x))
    model.eval()
    with torch.no_grad():
        accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
    print(json.dumps({"losses": epoch_losses, "lrs": lrs, "accuracy": accuracy}))


if __name__ == "__main__":
    main()
