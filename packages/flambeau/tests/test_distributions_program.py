"""Whole PyTorch programs using torch.distributions, run unchanged under flambeau-run and under PyTorch:
a REINFORCE policy-gradient loop with Categorical and a VAE-style loss with Normal.rsample and
kl_divergence. The random draws come from NumPy (actions by inverse cdf of the policy's probabilities,
the reparameterisation noise fed through the standard-normal sampler), so both runs see the same samples
and must print the same losses and parameters."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

CONSOLE = Path(sys.executable).with_name("flambeau-run")

REINFORCE = r"""
import json
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

rng = np.random.default_rng(0)
states = torch.tensor(rng.normal(size=(16, 4)), dtype=torch.float64)
policy = nn.Linear(4, 3).double()
with torch.no_grad():
    policy.weight.copy_(torch.tensor(rng.normal(size=(3, 4)) * 0.5, dtype=torch.float64))
    policy.bias.copy_(torch.tensor(rng.normal(size=3) * 0.1, dtype=torch.float64))
opt = torch.optim.SGD(policy.parameters(), lr=0.1)
losses = []
for step in range(5):
    m = Categorical(logits=policy(states))
    # The same actions in both libraries: inverse cdf of the policy's probabilities at NumPy uniforms.
    cdf = np.cumsum(m.probs.detach().numpy(), axis=-1)
    u = rng.uniform(size=(16, 1))
    actions = torch.tensor(np.minimum((u > cdf).sum(-1), 2))
    rewards = (actions == (states[:, 0] > 0).long() + 1).double() - 0.3
    loss = -(m.log_prob(actions) * rewards).mean() - 0.01 * m.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps({"losses": losses, "weight": policy.weight.detach().numpy().tolist()}))
"""

VAE = r"""
import json
import numpy as np
import torch
import torch.distributions as dist
import torch.distributions.normal as normal_module
from torch import nn

rng = np.random.default_rng(1)
# rsample's noise from NumPy, by shape, in both libraries.
normal_module._standard_normal = lambda shape, dtype, device: torch.tensor(rng.normal(size=tuple(shape)), dtype=dtype)
x = torch.tensor(rng.normal(size=(8, 6)), dtype=torch.float64)
encoder = nn.Linear(6, 4).double()
decoder = nn.Linear(2, 6).double()
for layer in (encoder, decoder):
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(rng.normal(size=tuple(layer.weight.shape)) * 0.3, dtype=torch.float64))
        layer.bias.zero_()
opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=0.05)
prior = dist.Normal(torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))
losses = []
for step in range(5):
    h = encoder(x)
    q = dist.Independent(dist.Normal(h[:, :2], nn.functional.softplus(h[:, 2:]) + 1e-3), 1)
    z = q.rsample()
    likelihood = dist.Independent(dist.Normal(decoder(z), 1.0), 1)
    kl = dist.kl_divergence(q, dist.Independent(prior, 1))
    loss = (kl - likelihood.log_prob(x)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps({"losses": losses, "weight": decoder.weight.detach().numpy().tolist()}))
"""


def _run(tmp_path, source, runner):
    script = tmp_path / "program.py"
    script.write_text(source)
    cmd = [str(CONSOLE), str(script)] if runner == "flambeau" else [sys.executable, str(script)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("source", [REINFORCE, VAE], ids=["reinforce_categorical", "vae_normal_rsample"])
def test_program_gives_torchs_losses(tmp_path, source):
    got = _run(tmp_path, source, "flambeau")
    expected = _run(tmp_path, source, "torch")
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["weight"], expected["weight"], rtol=1e-9, atol=1e-12)
    assert len(set(np.round(got["losses"], 6))) == len(got["losses"])  # it trains: the loss changes each step
