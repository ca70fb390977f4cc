"""Sine-wave prediction with two LSTMCells trained by L-BFGS, then run past the data (future steps).

A plain PyTorch script in the shape of the time-sequence-prediction example:
randomly shifted sine waves in float64 made with NumPy (seeded, so both
frameworks see the same ones), saved with `torch.save` and loaded back into
`torch.from_numpy` tensors, a model of two `nn.LSTMCell`s and a Linear
stepping through each sequence (`torch.cat` of the per-step predictions),
`optim.LBFGS` with a closure and the strong-Wolfe line search, and predictions fed back as inputs for `future`
steps. The weights start from fixed values: the run is deterministic. Prints
one JSON line: the loss of every closure call, the test loss and the last
predicted values.
"""

import json
import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

T, L, N, HIDDEN = 20, 60, 10, 24


def generate_sine_waves(path: Path) -> None:
    """The example's data step: randomly shifted sine waves made with NumPy, saved with torch.save."""
    rng = np.random.RandomState(2)
    x = np.empty((N, L), "int64")
    x[:] = np.array(range(L)) + rng.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype("float64")
    with open(path, "wb") as f:
        torch.save(data, f)


class Sequence(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # the prediction is the next input
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def deterministic_(model: nn.Module) -> None:
    with torch.no_grad():
        for i, (_name, p) in enumerate(model.named_parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float64)
            p.copy_((torch.sin(ramp * 0.61 + 0.4 * i) / math.sqrt(HIDDEN)).reshape(p.shape))


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    generate_sine_waves(out_dir / "traindata.pt")
    data = torch.load(out_dir / "traindata.pt", weights_only=False)  # a NumPy array, not tensors
    input, target = torch.from_numpy(data[3:, :-1]), torch.from_numpy(data[3:, 1:])
    test_input, test_target = torch.from_numpy(data[:3, :-1]), torch.from_numpy(data[:3, 1:])
    seq = Sequence().double()
    deterministic_(seq)
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=1.0, max_iter=8, line_search_fn="strong_wolfe")
    closure_losses = []
    for _step in range(2):

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            closure_losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
    with torch.no_grad():
        future = 20
        pred = seq(test_input, future=future)
        test_loss = criterion(pred[:, :-future], test_target).item()
    print(
        json.dumps(
            {
                "closure_losses": closure_losses,
                "test_loss": test_loss,
                "prediction_shape": list(pred.shape),
                "future": pred[:, -5:].reshape(-1).tolist(),
            }
        )
    )


if __name__ == "__main__":
    main()
