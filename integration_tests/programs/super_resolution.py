"""Super-resolution by sub-pixel convolution (PixelShuffle) on synthetic smooth images.

A plain PyTorch script in the shape of the super-resolution example: four
convolutions, the last with upscale^2 channels rearranged by `nn.PixelShuffle`,
weights initialised by `torch.nn.init.orthogonal_` with the ReLU gain, Adam on
the MSE to the high-resolution image. The low-resolution inputs are 2x2
average-pooled high-resolution ones. Prints one JSON line: the mean loss of
every epoch, the PSNR of the net and of nearest-neighbour upsampling on test
images, and whether the initial weights were orthogonal.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.init as init
import torch.optim as optim

UPSCALE, SIDE = 2, 12


class Net(nn.Module):
    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(16, 16, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(16, 8, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(8, upscale_factor**2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
        init.orthogonal_(self.conv4.weight)


def smooth_images(n: int) -> torch.Tensor:
    """Sums of two random plane waves, scaled into [0, 1]."""
    grid = torch.arange(SIDE, dtype=torch.float32)
    y, x = grid.view(1, SIDE, 1), grid.view(1, 1, SIDE)
    freq = torch.rand(n, 4, 1, 1) * 0.8
    phase = torch.rand(n, 2, 1, 1) * 2 * math.pi
    waves = torch.sin(freq[:, 0] * y + freq[:, 1] * x + phase[:, 0])
    waves = waves + torch.cos(freq[:, 2] * y - freq[:, 3] * x + phase[:, 1])
    return (0.5 + 0.25 * waves).unsqueeze(1)


def psnr(prediction, target) -> float:
    return 10 * math.log10(1 / F.mse_loss(prediction, target).item())


def main() -> None:
    torch.manual_seed(123)
    train_hr, test_hr = smooth_images(256), smooth_images(64)
    train_lr, test_lr = F.avg_pool2d(train_hr, UPSCALE), F.avg_pool2d(test_hr, UPSCALE)
    model = Net(upscale_factor=UPSCALE)
    flat = model.conv2.weight.detach().reshape(16, -1)
    orthogonal = bool(torch.allclose(flat @ flat.t(), 2.0 * torch.eye(16), atol=1e-4))
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    epoch_losses = []
    for _epoch in range(30):
        permutation = torch.randperm(len(train_hr))
        total = 0.0
        for start in range(0, len(train_hr), 32):
            index = permutation[start : start + 32]
            optimizer.zero_grad()
            loss = criterion(model(train_lr[index]), train_hr[index])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(index)
        epoch_losses.append(total / len(train_hr))
    with torch.no_grad():
        net_psnr = psnr(model(test_lr), test_hr)
        nearest_psnr = psnr(F.interpolate(test_lr, scale_factor=UPSCALE, mode="nearest"), test_hr)
    print(
        json.dumps(
            {"epoch_losses": epoch_losses, "psnr": net_psnr, "nearest_psnr": nearest_psnr, "orthogonal": orthogonal}
        )
    )


if __name__ == "__main__":
    main()
