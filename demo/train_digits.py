#!/usr/bin/env python
"""Train an MLP on scikit-learn's handwritten digits with flambeau.

The README's first command (``nox -s demo``) runs this script when Fashion-MNIST
cannot be installed (see demo/train_fashion_mnist.py, the main demo). It exercises every
flambeau package at once: core tensors and kernels, the caching allocator
(activated by ``import flambeau``), autograd, ``nn`` + ``optim``, the DataLoader
with two worker processes, interop (``from_numpy``) and a safetensors
checkpoint that is loaded back into a fresh model.

The data is real: ``sklearn.datasets.load_digits()`` ships 1,797 8x8 images of
handwritten digits inside scikit-learn (no download). A stratified 25% of them
is held out as the test set.

Exit status is non-zero if the reloaded model's test accuracy differs from the
trained model's, or is below 0.95.

Example:
    python demo/train_digits.py --epochs 20 --checkpoint checkpoints/digits_mlp.safetensors
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import flambeau as fb
import numpy as np
from _common import check_checkpoint, evaluate, print_memory_stats
from flambeau import nn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

MIN_ACCURACY = 0.95
SEED = 0
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent.parent / "checkpoints" / "digits_mlp.safetensors"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=15, help="training epochs (default: 15)")
    p.add_argument(
        "--checkpoint",
        type=Path,
        default=DEFAULT_CHECKPOINT,
        help=f"where to save the safetensors checkpoint (default: {DEFAULT_CHECKPOINT})",
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    p.add_argument("--num-workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--no-progress", action="store_true", help="hide the per-epoch progress bar")
    return p.parse_args(argv)


def load_data() -> tuple[fb.Tensor, fb.Tensor, fb.Tensor, fb.Tensor]:
    """Digits as standardized float32 features and int64 labels: (x_train, y_train, x_test, y_test)."""
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data, digits.target, test_size=0.25, stratify=digits.target, random_state=SEED
    )
    # Standardize with the training split's statistics only; some border pixels
    # are always 0, hence the floor on the standard deviation.
    mean = x_train.mean(axis=0)
    std = np.maximum(x_train.std(axis=0), 1e-6)

    def features(x: np.ndarray) -> fb.Tensor:
        return fb.from_numpy(np.ascontiguousarray((x - mean) / std, dtype=np.float32))

    def labels(y: np.ndarray) -> fb.Tensor:
        return fb.from_numpy(np.ascontiguousarray(y, dtype=np.int64))

    return features(x_train), labels(y_train), features(x_test), labels(y_test)


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, 128),
        nn.ReLU(),
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fb.manual_seed(SEED)
    t_start = time.perf_counter()

    x_train, y_train, x_test, y_test = load_data()
    print(
        f"digits: {x_train.shape[0]} train / {x_test.shape[0]} test images, {x_train.shape[1]} features, "
        f"threads={fb.get_num_threads()}, workers={args.num_workers}"
    )

    loader = fb.utils.data.DataLoader(
        fb.utils.data.TensorDataset(x_train, y_train),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
    )
    model = make_model()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = fb.optim.Adam(model.parameters(), lr=args.lr)

    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        total_loss, seen = 0.0, 0
        bar = tqdm(
            loader,
            desc=f"epoch {epoch:>2}/{args.epochs}",
            unit="batch",
            leave=False,
            disable=args.no_progress,
            file=sys.stdout,
        )
        for x, y in bar:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * y.shape[0]
            seen += y.shape[0]
            bar.set_postfix(loss=f"{total_loss / seen:.4f}", refresh=False)
        bar.close()
        accuracy, _ = evaluate(model, x_test, y_test)
        print(f"epoch {epoch:>2}/{args.epochs}  train loss {total_loss / seen:.4f}  test accuracy {accuracy:.4f}")

    trained_accuracy, reloaded_accuracy, same_predictions = check_checkpoint(
        model, make_model, args.checkpoint, x_test, y_test
    )

    del loader, model, optimizer
    print_memory_stats()
    print(f"total time {time.perf_counter() - t_start:.1f} s")

    if reloaded_accuracy != trained_accuracy or not same_predictions:
        print(
            f"FAIL: reloaded accuracy {reloaded_accuracy:.4f} != trained accuracy {trained_accuracy:.4f}",
            file=sys.stderr,
        )
        return 1
    if reloaded_accuracy < MIN_ACCURACY:
        print(f"FAIL: test accuracy {reloaded_accuracy:.4f} is below {MIN_ACCURACY}", file=sys.stderr)
        return 1
    print(f"OK: test accuracy {reloaded_accuracy:.4f} >= {MIN_ACCURACY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
