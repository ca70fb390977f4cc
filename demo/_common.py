"""What both demos share: batched evaluation, the checkpoint round trip and the allocator's report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import flambeau as fb
from flambeau import nn


def evaluate(model: nn.Module, x: fb.Tensor, y: fb.Tensor, batch_size: int = 1000) -> tuple[float, fb.Tensor]:
    """Accuracy of ``model`` on ``(x, y)`` in eval mode without autograd, and the predicted classes."""
    was_training = model.training
    model.eval()
    predictions = []
    with fb.no_grad():
        for start in range(0, x.shape[0], batch_size):
            predictions.append(model(x[start : start + batch_size]).argmax(dim=1))
    model.train(was_training)
    predicted = fb.cat(predictions)
    return (predicted == y).sum().item() / y.shape[0], predicted


def check_checkpoint(
    model: nn.Module, make_model: Callable[[], nn.Module], path: Path, x: fb.Tensor, y: fb.Tensor
) -> tuple[float, float, bool]:
    """Saves ``model``'s state_dict as safetensors, loads it into a fresh model and evaluates both.

    Returns (trained accuracy, reloaded accuracy, whether every prediction is the same).
    """
    trained_accuracy, trained_predictions = evaluate(model, x, y)
    path.parent.mkdir(parents=True, exist_ok=True)
    fb.save(model.state_dict(), str(path))
    print(f"saved checkpoint: {path} ({format_bytes(path.stat().st_size)}, safetensors)")
    fresh = make_model()
    fresh.load_state_dict(fb.load(str(path)))
    reloaded_accuracy, reloaded_predictions = evaluate(fresh, x, y)
    same = (reloaded_predictions == trained_predictions).sum().item() == y.shape[0]
    print(
        f"reloaded model: test accuracy {reloaded_accuracy:.4f} "
        f"({'same predictions' if same else 'DIFFERENT predictions'})"
    )
    return trained_accuracy, reloaded_accuracy, same


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")


# (key in memory_stats(), what it means); torch.cuda.memory_stats() names.
MEMORY_HIGHLIGHTS = [
    ("allocation.all.allocated", "allocations served"),
    ("num_device_alloc", "system allocations (segments mapped)"),
    ("num_device_free", "system frees (segments unmapped)"),
    ("allocated_bytes.all.current", "allocated now"),
    ("allocated_bytes.all.peak", "allocated, peak"),
    ("reserved_bytes.all.current", "reserved now (allocated + cached)"),
    ("reserved_bytes.all.peak", "reserved, peak"),
]


def print_memory_stats() -> None:
    """The caching allocator's highlights: how much it cached, how rarely it asked the system."""
    stats = fb.memory.memory_stats()
    print(f"caching allocator (fb.memory.memory_stats(); current CPU allocator: {fb.memory.get_allocator().name}):")
    for key, meaning in MEMORY_HIGHLIGHTS:
        if key not in stats:
            continue
        value = stats[key]
        shown = format_bytes(value) if "bytes" in key else f"{value:,}"
        print(f"  {meaning:<40}{shown:>12}   [{key}]")
