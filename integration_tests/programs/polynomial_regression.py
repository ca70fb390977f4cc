"""Fits a degree-4 polynomial with one nn.Linear on its powers, by hand-written SGD.

A plain PyTorch script. Every batch is fresh `torch.randn` samples of the
target polynomial; the features are the concatenated powers of x. The
parameters are updated by hand, half of the steps through `p.data.add_`, the
other half in place under `torch.no_grad()`. Prints one JSON line: the learned
and the target coefficients, the last loss, the number of steps and the
formatted polynomial.
"""

import json

import torch
import torch.nn.functional as F

DEGREE = 4
W_TARGET = torch.tensor([[0.5], [-1.2], [0.3], [0.8]])
B_TARGET = torch.tensor([0.7])


def make_features(x):
    """Builds the columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, DEGREE + 1)], 1)


def f(x):
    return x.mm(W_TARGET) + B_TARGET.item()


def get_batch(batch_size=32):
    random = torch.randn(batch_size) * 0.8
    x = make_features(random)
    return x, f(x)


def poly_desc(W, b):
    result = "y = "
    for i, w in enumerate(W):
        result += f"{w:+.2f} x^{i + 1} "
    result += f"{b[0]:+.2f}"
    return result


def main() -> None:
    torch.manual_seed(1)
    fc = torch.nn.Linear(W_TARGET.size(0), 1)
    lr = 0.05
    steps = 0
    for steps in range(1, 4001):
        batch_x, batch_y = get_batch()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        if steps % 2:
            for param in fc.parameters():
                param.data.add_(-lr * param.grad)
        else:
            with torch.no_grad():
                for param in fc.parameters():
                    param -= lr * param.grad
        if loss < 1e-4:
            break
    print(f"Loss: {loss:.6f} after {steps} batches", flush=True)
    print("==> Learned function:\t" + poly_desc(fc.weight.view(-1), fc.bias))
    print("==> Actual function:\t" + poly_desc(W_TARGET.view(-1), B_TARGET))
    print(
        json.dumps(
            {
                "weight": fc.weight.view(-1).tolist(),
                "bias": fc.bias.item(),
                "target_weight": W_TARGET.view(-1).tolist(),
                "target_bias": B_TARGET.item(),
                "loss": loss,
                "steps": steps,
                "desc": poly_desc(fc.weight.view(-1), fc.bias),
            }
        )
    )


if __name__ == "__main__":
    main()
