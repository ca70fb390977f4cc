"""add_embedding's files for TensorBoard's projector: tensors.tsv, metadata.tsv, sprite.png, projector_config.pbtxt."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from flambeau_core import FlambeauError

from . import _summary

_WHERE = "SummaryWriter.add_embedding"


def encode_tag(tag: str) -> str:
    """The tag as one path component: %, / and \\ percent-encoded (PyTorch's folder names)."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _text_format_string(value: str) -> str:
    """A protobuf text-format string literal (C escapes; bytes outside printable ASCII in octal)."""
    out = []
    for byte in value.encode("utf-8"):
        char = chr(byte)
        if char in "\"'\\":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def write_embedding(
    save_path: str,
    mat: np.ndarray,
    metadata: Sequence[Any] | None,
    label_img: Any,
    metadata_header: Sequence[Any] | None,
) -> tuple[int, int] | None:
    """Writes the files of one embedding into save_path; returns the sprite's single-image (width, height)."""
    if mat.ndim != 2:
        raise FlambeauError(f"[{_WHERE}] mat must be 2-D (points × features), got shape {tuple(mat.shape)}")
    if metadata is not None and len(metadata) != mat.shape[0]:
        raise FlambeauError(f"[{_WHERE}] metadata has {len(metadata)} labels for {mat.shape[0]} points")
    images = None
    if label_img is not None:
        images = _summary.to_numpy(label_img, _WHERE)
        if images.ndim != 4 or images.shape[0] != mat.shape[0] or images.shape[1] not in (1, 3):
            raise FlambeauError(
                f"[{_WHERE}] label_img must be N×C×H×W with N = {mat.shape[0]} points and C = 1 or 3, "
                f"got shape {tuple(images.shape)}"
            )
    if metadata is not None and metadata_header and any(len(row) != len(metadata_header) for row in metadata):
        raise FlambeauError(
            f"[{_WHERE}] each metadata row needs {len(metadata_header)} columns (one per metadata_header)"
        )
    os.makedirs(save_path, exist_ok=True)
    lines: list[str]
    if metadata is not None:
        if metadata_header:
            rows = [list(metadata_header), *metadata]
            lines = ["\t".join(str(v) for v in row) for row in rows]
        else:
            lines = [str(v) for v in metadata]
        _write(save_path, "metadata.tsv", "\n".join(lines) + "\n")
    sprite_dim = None
    if images is not None:
        per_row = math.ceil(math.sqrt(images.shape[0]))
        grid = _summary.make_grid(images, _WHERE, ncols=per_row).transpose(1, 2, 0)
        # The projector expects a square sprite (as wide as the grid): pad it below with black rows.
        square = np.zeros((max(grid.shape[:2]), grid.shape[1], 3), dtype=np.float32)
        square[: grid.shape[0]] = grid
        scale = 1 if images.dtype == np.uint8 else 255
        pixels = (square * scale).clip(0, 255).astype(np.uint8)
        with open(os.path.join(save_path, "sprite.png"), "wb") as f:
            f.write(_summary.encode_png(pixels))
        sprite_dim = (images.shape[3], images.shape[2])
    _write(save_path, "tensors.tsv", "".join("\t".join(map(str, row)) + "\n" for row in mat.tolist()))
    return sprite_dim


def _write(save_path: str, name: str, text: str) -> None:
    with open(os.path.join(save_path, name), "wb") as f:
        f.write(text.encode("utf-8"))


def embedding_info(tag: str, step: str, subdir: str, has_metadata: bool, sprite_dim: tuple[int, int] | None) -> str:
    """One ``embeddings { ... }`` entry of projector_config.pbtxt (ProjectorConfig's text format)."""
    fields = [
        f"  tensor_name: {_text_format_string(f'{tag}:{step}')}",
        f"  tensor_path: {_text_format_string(subdir + '/tensors.tsv')}",
    ]
    if has_metadata:
        fields.append(f"  metadata_path: {_text_format_string(subdir + '/metadata.tsv')}")
    if sprite_dim is not None:
        fields += [
            "  sprite {",
            f"    image_path: {_text_format_string(subdir + '/sprite.png')}",
            f"    single_image_dim: {sprite_dim[0]}",
            f"    single_image_dim: {sprite_dim[1]}",
            "  }",
        ]
    return "embeddings {\n" + "\n".join(fields) + "\n}\n"
