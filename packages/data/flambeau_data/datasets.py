"""Image datasets read from local files: MNIST and Fashion-MNIST (IDX format).

The signature is torchvision's (``root, train=True, transform=None,
target_transform=None, download=False``) but nothing is downloaded: the four
IDX files must already be on disk, gzipped (``*.gz``) or not. ``root`` may be

- the folder holding the files itself, e.g. ``/usr/share/datasets/fashion-mnist``
  as installed by Debian's ``dataset-fashion-mnist`` package
  (``sudo apt-get install dataset-fashion-mnist``), or
- torchvision's layout: ``root/FashionMNIST/raw/`` (``root/MNIST/raw/``).

The whole split is read at construction: ``data`` is a uint8 tensor of shape
``(N, 28, 28)`` and ``targets`` an int64 tensor of shape ``(N,)``. A sample is
``(image, target)``: the image a uint8 ``(28, 28)`` tensor (a view into
``data``; pass a ``transform`` to convert it), the target a Python int.
``__getitems__`` fetches a whole batch with one gather (the DataLoader uses
it: without transforms, a batch is two indexed copies, ``data[index]`` and
``targets[index]``, made straight into shared memory by a worker).

Example:
    >>> FashionMNIST("/nonexistent")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: [FashionMNIST] train-images-idx3-ubyte(.gz) and train-labels-idx1-ubyte(.gz) not found in ...
"""

from __future__ import annotations

import array
import gzip
import os
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import flambeau_core as fc

from flambeau_data.dataset import Dataset, GatheredBatch, check_indices

__all__ = ["MNIST", "FashionMNIST"]

_GZIP_MAGIC = b"\x1f\x8b"
_UBYTE = 0x08  # IDX type code of unsigned bytes, the only one these datasets use


def _read_bytes(path: Path, op: str) -> bytearray:
    """The file's bytes, decompressed if it is gzipped (recognised by its content, not its name)."""
    raw = path.read_bytes()
    if raw[:2] != _GZIP_MAGIC:
        return bytearray(raw)
    try:
        return bytearray(gzip.decompress(raw))
    except (OSError, EOFError, zlib.error) as e:
        raise ValueError(f"[{op}] {path}: corrupt or truncated gzip data ({e})") from e


def _read_idx(path: Path, ndim: int, op: str) -> fc.Tensor:
    """An IDX file of unsigned bytes with ``ndim`` dimensions, as a uint8 tensor of the header's shape.

    Raises ValueError naming the file for a wrong magic number (type or number
    of dimensions), a truncated header or payload, or trailing bytes.
    """
    data = _read_bytes(path, op)
    header = 4 + 4 * ndim
    expected_magic = (_UBYTE << 8) | ndim
    if len(data) < 4:
        raise ValueError(f"[{op}] {path}: truncated file ({len(data)} bytes; an IDX file starts with a 4-byte magic)")
    magic = int.from_bytes(data[:4], "big")
    if magic != expected_magic:
        raise ValueError(
            f"[{op}] {path}: bad magic number 0x{magic:08x}, expected 0x{expected_magic:08x} "
            f"(IDX, unsigned bytes, {ndim} dimension{'s' if ndim > 1 else ''}); is this the right file?"
        )
    if len(data) < header:
        raise ValueError(f"[{op}] {path}: truncated header ({len(data)} bytes, expected {header})")
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    count = 1
    for d in shape:
        count *= d
    payload = len(data) - header
    if payload < count:
        raise ValueError(
            f"[{op}] {path}: truncated file: the header announces shape {tuple(shape)} "
            f"({count} bytes of data), the file holds {payload}"
        )
    if payload > count:
        raise ValueError(
            f"[{op}] {path}: {payload - count} unexpected trailing bytes after the {count} bytes "
            f"of shape {tuple(shape)}"
        )
    if count == 0:  # frombuffer wants at least one byte after the offset
        return fc.empty(shape, dtype=fc.uint8)
    return fc.frombuffer(data, dtype=fc.uint8, offset=header, count=count).view(shape)


class MNIST(Dataset[tuple[Any, Any]]):
    """The MNIST handwritten digits (60,000 train / 10,000 test 28x28 grey images, 10 classes).

    Args:
        root: the folder holding the IDX files, or a folder with torchvision's
            layout ``root/MNIST/raw/``.
        train: the training split (``train-*``) if True, else the test split (``t10k-*``).
        transform: applied to each image (a uint8 ``(28, 28)`` tensor).
        target_transform: applied to each target (an int).
        download: must be False; flambeau has no download code (raises NotImplementedError).

    Attributes: ``data`` (uint8, ``(N, 28, 28)``), ``targets`` (int64, ``(N,)``),
    ``classes``, ``class_to_idx``, ``folder`` (where the files were found).

    Raises FileNotFoundError (listing where it looked) when the files are
    missing, ValueError naming the file when one is not a valid IDX file of the
    expected kind or is truncated.
    """

    classes = [
        "0 - zero",
        "1 - one",
        "2 - two",
        "3 - three",
        "4 - four",
        "5 - five",
        "6 - six",
        "7 - seven",
        "8 - eight",
        "9 - nine",
    ]
    #: Debian's package shipping the files, and where it puts them (None: no package).
    debian_package: str | None = None
    debian_root: str | None = None

    def __init__(
        self,
        root: str | os.PathLike[str],
        train: bool = True,
        transform: Callable[[Any], Any] | None = None,
        target_transform: Callable[[Any], Any] | None = None,
        download: bool = False,
    ) -> None:
        name = type(self).__name__
        if download:
            raise NotImplementedError(
                f"[{name}] download=True: flambeau_data has no download code; {self._install_hint()} "
                f"and pass the folder holding the files as root (download=False)"
            )
        if isinstance(root, (str, os.PathLike)):
            root = os.path.expanduser(root)
        else:
            raise TypeError(f"[{name}] root must be a str or os.PathLike, got {type(root).__name__}")
        self.root = str(root)
        self.train = bool(train)
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if self.train else "t10k"
        images_path, labels_path = self._find_files(
            Path(root), f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"
        )
        self.folder = str(images_path.parent)
        self.data = _read_idx(images_path, 3, name)
        labels = _read_idx(labels_path, 1, name)
        if labels.shape[0] != self.data.shape[0]:
            raise ValueError(
                f"[{name}] {labels_path} holds {labels.shape[0]} labels but {images_path} holds "
                f"{self.data.shape[0]} images"
            )
        if labels.numel() and labels.max().item() >= len(self.classes):
            raise ValueError(
                f"[{name}] {labels_path}: label {labels.max().item()} is out of range for {len(self.classes)} classes"
            )
        self.targets = labels.to(fc.int64)

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    @classmethod
    def _install_hint(cls) -> str:
        files = ", ".join(
            f"{s}-{k}-idx{d}-ubyte.gz" for s in ("train", "t10k") for k, d in (("images", 3), ("labels", 1))
        )
        if cls.debian_package:
            return (
                f"install the files with `sudo apt-get install {cls.debian_package}` (into {cls.debian_root}) "
                f"or copy {files} into a folder"
            )
        return (
            f"copy {files} into a folder (Debian has no MNIST package; "
            "`sudo apt-get install dataset-fashion-mnist` installs Fashion-MNIST)"
        )

    def _find_files(self, root: Path, images: str, labels: str) -> tuple[Path, Path]:
        """The images and labels files in ``root`` itself or in ``root/<ClassName>/raw``; plain before gzipped."""
        name = type(self).__name__
        folders = [root, root / name / "raw"]
        for folder in folders:
            found = []
            for stem in (images, labels):
                candidates = [folder / stem, folder / f"{stem}.gz"]
                found.append(next((p for p in candidates if p.is_file()), None))
            if all(p is not None for p in found):
                return found[0], found[1]  # type: ignore[return-value]
        looked = " and ".join(str(f) for f in folders)
        raise FileNotFoundError(
            f"[{name}] {images}(.gz) and {labels}(.gz) not found in {looked}; {self._install_hint()}"
        )

    def __len__(self) -> int:
        return self.data.shape[0]

    def _sample(self, image: fc.Tensor, target: int) -> tuple[Any, Any]:
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        """``(image, target)``: a uint8 ``(28, 28)`` tensor (or ``transform(image)``) and an int."""
        if not isinstance(index, int) and not hasattr(index, "__index__"):
            raise TypeError(f"[{type(self).__name__}] index must be an int, got {type(index).__name__}")
        index = int(index)
        return self._sample(self.data[index], int(self.targets[index].item()))

    def __getitems__(self, indices: Sequence[int]) -> Sequence[tuple[Any, Any]]:
        """The samples at ``indices``, gathered with one indexed copy (Note [Batched fetch]).

        Without transforms, a ``GatheredBatch`` of the images and the (int64
        tensor) targets: ``default_collate`` returns its two tensors as the
        batch, and a DataLoader worker gathers them straight into shared
        memory. With a transform, the list of transformed samples.
        """
        try:
            packed = array.array("q", indices)
        except (TypeError, ValueError, OverflowError):
            return [self[i] for i in indices]  # not plain ints: sample by sample
        check_indices(packed, len(self), type(self).__name__)
        if self.transform is None and self.target_transform is None:
            return GatheredBatch.rows((self.data, self.targets), packed)
        if not packed:
            return []
        index = fc.frombuffer(packed, dtype=fc.int64)
        images = self.data[index].unbind(0)
        targets = self.targets[index].tolist()
        return [self._sample(image, target) for image, target in zip(images, targets, strict=True)]

    def __repr__(self) -> str:
        lines = [
            f"Dataset {type(self).__name__}",
            f"    Number of datapoints: {len(self)}",
            f"    Root location: {self.root}",
            f"    Split: {'Train' if self.train else 'Test'}",
        ]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 60,000 train / 10,000 test 28x28 grey images of clothes, 10 classes.

    Same files, format and arguments as :class:`MNIST`. On Debian/Ubuntu,
    ``sudo apt-get install dataset-fashion-mnist`` puts the files in
    ``/usr/share/datasets/fashion-mnist`` (:attr:`debian_root`); torchvision's
    ``root/FashionMNIST/raw/`` works as well.
    """

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    debian_package = "dataset-fashion-mnist"
    debian_root = "/usr/share/datasets/fashion-mnist"
