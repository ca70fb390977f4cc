"""A variational autoencoder on synthetic 8x8 bar images, with samples saved by torch.save.

A plain PyTorch script: an MLP encoder to a mean and a log-variance, the
reparameterisation trick (`torch.randn_like`), a sigmoid decoder, the loss
binary cross-entropy (summed) plus the KL divergence to N(0, I), Adam and a
shuffling DataLoader. After training it decodes `torch.randn` latents, saves
them with `torch.save` and loads them back. Prints one JSON line: the mean
training loss of every epoch, the test loss and what was saved.
"""

import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

SIDE, LATENT = 8, 4


def bar_images(n: int) -> torch.Tensor:
    """Each image one horizontal or vertical bar of ones, at a random row or column."""
    images = torch.zeros(n, SIDE, SIDE)
    where = torch.randint(0, SIDE, (n,))
    vertical = torch.rand(n) < 0.5
    for i in range(n):
        if vertical[i]:
            images[i, :, where[i]] = 1.0
        else:
            images[i, where[i], :] = 1.0
    return images.view(n, 1, SIDE, SIDE)


class VAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(SIDE * SIDE, 48)
        self.fc21 = nn.Linear(48, LATENT)
        self.fc22 = nn.Linear(48, LATENT)
        self.fc3 = nn.Linear(LATENT, 48)
        self.fc4 = nn.Linear(48, SIDE * SIDE)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, SIDE * SIDE))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, SIDE * SIDE), reduction="sum")
    # KL(N(mu, sigma) || N(0, 1)), summed over the batch and the latent dimensions.
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    torch.manual_seed(0)
    train_loader = DataLoader(TensorDataset(bar_images(512)), batch_size=64, shuffle=True)
    test_images = bar_images(128)
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    epoch_losses = []
    for _epoch in range(12):
        model.train()
        train_loss = 0.0
        for (data,) in train_loader:
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = loss_function(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
        epoch_losses.append(train_loss / len(train_loader.dataset))
    model.eval()
    with torch.no_grad():
        recon, mu, logvar = model(test_images)
        test_loss = loss_function(recon, test_images, mu, logvar).item() / len(test_images)
        sample = model.decode(torch.randn(16, LATENT)).view(16, 1, SIDE, SIDE)
    torch.save(sample, out_dir / "sample.pt")
    loaded = torch.load(out_dir / "sample.pt")
    print(
        json.dumps(
            {
                "epoch_losses": epoch_losses,
                "test_loss": test_loss,
                "sample_shape": list(loaded.shape),
                "sample_in_unit_interval": bool(((loaded >= 0) & (loaded <= 1)).all()),
                "sample_roundtrip": bool((loaded == sample).all()),
            }
        )
    )


if __name__ == "__main__":
    main()
