"""A DCGAN on synthetic 8x8 blob images: ConvTranspose2d generator, Conv2d discriminator.

A plain PyTorch script in the shape of the DCGAN example: BatchNorm, ReLU and
Tanh in the generator, LeakyReLU and a Sigmoid in the discriminator, BCELoss
with real/fake labels made by `torch.full`, two Adam optimizers with
`betas=(0.5, 0.999)`, the discriminator trained on `fake.detach()`. The
weights start from fixed values and the latent noise is a fixed bank (no RNG),
so the run is deterministic. Prints one JSON line: both losses, D(x) and
D(G(z)) of every step, and the mean of the generated images.
"""

import json
import math

import torch
import torch.nn as nn
import torch.optim as optim

NZ, NGF, NDF, SIDE, BATCH = 8, 16, 16, 8, 16
REAL_LABEL, FAKE_LABEL = 1.0, 0.0


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, NGF * 2, 4, 1, 0, bias=False),  # -> (NGF*2) x 4 x 4
            nn.BatchNorm2d(NGF * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 2, NGF, 3, 1, 1, bias=False),  # -> NGF x 4 x 4
            nn.BatchNorm2d(NGF),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF, 1, 4, 2, 1, bias=False),  # -> 1 x 8 x 8
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, NDF, 4, 2, 1, bias=False),  # -> NDF x 4 x 4
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF, NDF * 2, 3, 1, 1, bias=False),  # -> (NDF*2) x 4 x 4
            nn.BatchNorm2d(NDF * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False),  # -> 1 x 1 x 1
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def weights_init(m: nn.Module) -> None:
    # The DCGAN initialisation (N(0, 0.02) convolutions, N(1, 0.02) norms), drawn from a fixed sequence.
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        ramp = torch.arange(m.weight.numel(), dtype=torch.float32)
        m.weight.data.copy_((torch.sin(ramp * 1.7 + 0.3) * 0.05).view_as(m.weight))
    elif classname.find("BatchNorm") != -1:
        ramp = torch.arange(m.weight.numel(), dtype=torch.float32)
        m.weight.data.copy_(1.0 + torch.cos(ramp * 2.3) * 0.02)
        m.bias.data.fill_(0)


def real_images(step: int) -> torch.Tensor:
    """A batch of Gaussian blobs in [-1, 1] at positions that move with the step."""
    k = torch.arange(BATCH, dtype=torch.float32) + step * BATCH
    cy = 3.5 + 2.0 * torch.sin(k * 0.7)
    cx = 3.5 + 2.0 * torch.cos(k * 1.3)
    grid = torch.arange(SIDE, dtype=torch.float32)
    dy = (grid.view(1, SIDE, 1) - cy.view(-1, 1, 1)) ** 2
    dx = (grid.view(1, 1, SIDE) - cx.view(-1, 1, 1)) ** 2
    return (2.0 * torch.exp(-(dy + dx) / 3.0) - 1.0).unsqueeze(1)


def noise(step: int) -> torch.Tensor:
    k = torch.arange(BATCH * NZ, dtype=torch.float32) + step * 31
    return torch.sin(k * 12.9898 + math.pi / 7).mul(1.5).view(BATCH, NZ, 1, 1)


def main() -> None:
    net_g, net_d = Generator(), Discriminator()
    net_g.apply(weights_init)
    net_d.apply(weights_init)
    criterion = nn.BCELoss()
    optimizer_d = optim.Adam(net_d.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_g = optim.Adam(net_g.parameters(), lr=2e-3, betas=(0.5, 0.999))
    history = {"loss_d": [], "loss_g": [], "d_x": [], "d_g_z": []}
    for step in range(40):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        net_d.zero_grad()
        real = real_images(step)
        label = torch.full((BATCH,), REAL_LABEL, dtype=real.dtype)
        output = net_d(real)
        err_d_real = criterion(output, label)
        err_d_real.backward()
        d_x = output.mean().item()
        fake = net_g(noise(step))
        label.fill_(FAKE_LABEL)
        output = net_d(fake.detach())
        err_d_fake = criterion(output, label)
        err_d_fake.backward()
        err_d = err_d_real + err_d_fake
        optimizer_d.step()
        # (2) Update G: maximize log(D(G(z)))
        net_g.zero_grad()
        label.fill_(REAL_LABEL)  # fake labels are real for the generator cost
        output = net_d(fake)
        err_g = criterion(output, label)
        err_g.backward()
        d_g_z = output.mean().item()
        optimizer_g.step()
        for key, value in zip(history, (err_d.item(), err_g.item(), d_x, d_g_z), strict=True):
            history[key].append(value)
    net_g.eval()
    with torch.no_grad():
        fake = net_g(noise(1000))
    history["fake_mean"] = fake.mean().item()
    history["fake_in_range"] = bool((fake.abs() <= 1).all())
    print(json.dumps(history))


if __name__ == "__main__":
    main()
