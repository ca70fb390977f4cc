"""MNIST and FashionMNIST read from IDX files written by the tests themselves (gzipped and not)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import flambeau_core as fc
import pytest
from flambeau_data import DataLoader
from flambeau_data.datasets import MNIST, FashionMNIST

ROWS, COLS = 28, 28


def idx_bytes(values: list[int], shape: tuple[int, ...], type_code: int = 0x08) -> bytes:
    """An IDX file: magic (0, 0, type, ndim), big-endian dims, then the bytes."""
    header = struct.pack(">BBBB", 0, 0, type_code, len(shape)) + b"".join(struct.pack(">I", d) for d in shape)
    return header + bytes(values)


def images_for(n: int) -> list[int]:
    # Pixel (k, r, c) = (7 k + 3 r + c) mod 256: every image differs from its neighbours.
    return [(7 * k + 3 * r + c) % 256 for k in range(n) for r in range(ROWS) for c in range(COLS)]


def labels_for(n: int) -> list[int]:
    return [(5 * k + 1) % 10 for k in range(n)]


def write(path: Path, data: bytes, gz: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def write_split(folder: Path, prefix: str, n: int, gz: bool) -> tuple[Path, Path]:
    images = write(folder / f"{prefix}-images-idx3-ubyte", idx_bytes(images_for(n), (n, ROWS, COLS)), gz)
    labels = write(folder / f"{prefix}-labels-idx1-ubyte", idx_bytes(labels_for(n), (n,)), gz)
    return images, labels


def write_dataset(folder: Path, gz: bool, n_train: int = 7, n_test: int = 3) -> Path:
    write_split(folder, "train", n_train, gz)
    write_split(folder, "t10k", n_test, gz)
    return folder


def expected_image(k: int) -> list[list[int]]:
    return [[(7 * k + 3 * r + c) % 256 for c in range(COLS)] for r in range(ROWS)]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzipped"])
@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
def test_reads_both_splits(tmp_path, cls, gz):
    root = write_dataset(tmp_path, gz)
    train, test = cls(root), cls(str(root), train=False)
    assert (len(train), len(test)) == (7, 3)
    assert train.data.dtype == fc.uint8 and tuple(train.data.shape) == (7, ROWS, COLS)
    assert train.targets.dtype == fc.int64 and tuple(train.targets.shape) == (7,)
    assert train.data.tolist() == [expected_image(k) for k in range(7)]
    assert train.targets.tolist() == labels_for(7)
    assert test.data.tolist() == [expected_image(k) for k in range(3)]
    assert test.targets.tolist() == labels_for(3)
    assert train.folder == str(tmp_path) and train.train and not test.train
    image, target = train[2]
    assert image.dtype == fc.uint8 and tuple(image.shape) == (ROWS, COLS)
    assert image.tolist() == expected_image(2)
    assert type(target) is int and target == labels_for(7)[2]
    assert train[-1][1] == labels_for(7)[6]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzipped"])
def test_torchvision_layout(tmp_path, gz):
    write_dataset(tmp_path / "FashionMNIST" / "raw", gz, n_train=4)
    ds = FashionMNIST(tmp_path)
    assert len(ds) == 4 and ds.folder == str(tmp_path / "FashionMNIST" / "raw")
    write_dataset(tmp_path / "MNIST" / "raw", gz, n_train=5)
    assert len(MNIST(tmp_path)) == 5


def test_plain_file_preferred_over_gzipped(tmp_path):
    write_dataset(tmp_path, gz=True, n_train=4)
    write_dataset(tmp_path, gz=False, n_train=6)
    assert len(MNIST(tmp_path)) == 6


def test_gzip_recognised_by_content_not_name(tmp_path):
    # torchvision's raw folder holds extracted files; a gzipped file without the suffix still reads.
    write_split(tmp_path, "train", 3, gz=False)
    images = tmp_path / "train-images-idx3-ubyte"
    images.write_bytes(gzip.compress(images.read_bytes()))
    assert MNIST(tmp_path).data.tolist() == [expected_image(k) for k in range(3)]


def test_transforms_and_batched_fetch(tmp_path):
    root = write_dataset(tmp_path, gz=True, n_train=9)
    ds = FashionMNIST(root, transform=lambda img: img.float() / 255, target_transform=lambda t: t * 10)
    image, target = ds[4]
    assert image.dtype == fc.float32 and image.tolist()[1][2] == pytest.approx(expected_image(4)[1][2] / 255)
    assert target == 10 * labels_for(9)[4]
    batch = ds.__getitems__([8, 0, -2, 3])
    assert [t for _, t in batch] == [10 * labels_for(9)[k] for k in (8, 0, 7, 3)]
    for (img, _), k in zip(batch, (8, 0, 7, 3), strict=True):
        assert img.dtype == fc.float32 and tuple(img.shape) == (ROWS, COLS)
        assert img.mul(255).round().to(fc.uint8).tolist() == expected_image(k)
    assert ds.__getitems__([]) == []
    # Without transforms: the gathered columns (targets as int64 tensors).
    plain = FashionMNIST(root)
    batch = plain.__getitems__([1, 5, -1])
    assert len(batch) == 3
    assert [(img.tolist(), int(t)) for img, t in batch] == [
        (expected_image(1), labels_for(9)[1]),
        (expected_image(5), labels_for(9)[5]),
        (expected_image(8), labels_for(9)[8]),
    ]
    assert len(plain.__getitems__([])) == 0


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_uses_getitems(tmp_path, num_workers):
    root = write_dataset(tmp_path, gz=False, n_train=10)

    class Counting(MNIST):
        calls = 0

        def __getitems__(self, indices):
            Counting.calls += 1
            return super().__getitems__(indices)

    ds = Counting(root)
    loader = DataLoader(ds, batch_size=4, num_workers=num_workers)
    batches = list(loader)
    assert [tuple(x.shape) for x, _ in batches] == [(4, ROWS, COLS), (4, ROWS, COLS), (2, ROWS, COLS)]
    assert batches[0][0].dtype == fc.uint8 and batches[0][1].dtype == fc.int64
    assert fc.cat([y for _, y in batches]).tolist() == labels_for(10)
    assert fc.cat([x for x, _ in batches]).tolist() == [expected_image(k) for k in range(10)]
    if num_workers == 0:
        assert Counting.calls == 3


def test_metadata_and_repr(tmp_path):
    root = write_dataset(tmp_path, gz=False)
    ds = FashionMNIST(root, train=False)
    assert ds.classes[0] == "T-shirt/top" and ds.classes[9] == "Ankle boot" and len(ds.classes) == 10
    assert ds.class_to_idx["Sneaker"] == 7
    assert MNIST.classes[3] == "3 - three"
    assert repr(ds).splitlines() == [
        "Dataset FashionMNIST",
        "    Number of datapoints: 3",
        f"    Root location: {root}",
        "    Split: Test",
    ]
    assert FashionMNIST.debian_root == "/usr/share/datasets/fashion-mnist"


def test_empty_split(tmp_path):
    write(tmp_path / "train-images-idx3-ubyte", idx_bytes([], (0, ROWS, COLS)), gz=False)
    write(tmp_path / "train-labels-idx1-ubyte", idx_bytes([], (0,)), gz=False)
    ds = MNIST(tmp_path)
    assert len(ds) == 0 and tuple(ds.data.shape) == (0, ROWS, COLS)


# ----------------------------------------------------------------------------- errors


def test_download_raises(tmp_path):
    write_dataset(tmp_path, gz=False)
    with pytest.raises(NotImplementedError, match=r"\[FashionMNIST\] download=True: .*no download.*apt-get install"):
        FashionMNIST(tmp_path, download=True)
    with pytest.raises(NotImplementedError, match=r"\[MNIST\] download=True: .*no download"):
        MNIST(tmp_path, download=True)


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        FashionMNIST(tmp_path / "nowhere")
    msg = str(info.value)
    assert "train-images-idx3-ubyte(.gz)" in msg and "train-labels-idx1-ubyte(.gz)" in msg
    assert str(tmp_path / "nowhere") in msg and str(tmp_path / "nowhere" / "FashionMNIST" / "raw") in msg
    assert "sudo apt-get install dataset-fashion-mnist" in msg
    with pytest.raises(FileNotFoundError, match=r"\[MNIST\] .*MNIST/raw.*Debian has no MNIST package"):
        MNIST(tmp_path)


def test_one_file_of_the_pair_missing(tmp_path):
    images, _ = write_split(tmp_path, "train", 3, gz=True)
    write_split(tmp_path, "t10k", 3, gz=False)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte"):
        MNIST(tmp_path, train=False)
    images.unlink()
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        MNIST(tmp_path)


def replace(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzipped"])
@pytest.mark.parametrize(
    "which, data, pattern",
    [
        ("images", idx_bytes([1, 2, 3], (3,)), r"bad magic number 0x00000801, expected 0x00000803"),
        ("labels", idx_bytes(images_for(3), (3, ROWS, COLS)), r"bad magic number 0x00000803, expected 0x00000801"),
        ("images", idx_bytes(images_for(3), (3, ROWS, COLS), type_code=0x0D), r"bad magic number 0x00000d03"),
        ("images", b"\x00\x00\x08", r"truncated file \(3 bytes"),
        ("images", b"", r"truncated file \(0 bytes"),
        ("images", idx_bytes([], (3, ROWS, COLS))[:10], r"truncated header \(10 bytes, expected 16\)"),
        (
            "images",
            idx_bytes(images_for(3), (3, ROWS, COLS))[:-5],
            r"truncated file: .*\(3, 28, 28\).*2352 bytes.*2347",
        ),
        ("labels", idx_bytes([1, 2], (3,)), r"truncated file: .*\(3,\) \(3 bytes of data\), the file holds 2"),
        ("labels", idx_bytes([1, 2, 3, 4], (3,)), r"1 unexpected trailing bytes"),
        ("labels", idx_bytes([1, 2], (2,)), r"holds 2 labels but .* holds 3 images"),
        ("labels", idx_bytes([1, 10, 2], (3,)), r"label 10 is out of range for 10 classes"),
    ],
)
def test_bad_files(tmp_path, gz, which, data, pattern):
    images, labels = write_split(tmp_path, "train", 3, gz)
    path = images if which == "images" else labels
    replace(path, data)
    with pytest.raises(ValueError, match=pattern) as info:
        MNIST(tmp_path)
    assert "[MNIST]" in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("cut", [5, 30, -9])
def test_corrupt_gzip(tmp_path, cut):
    images, _ = write_split(tmp_path, "train", 3, gz=True)
    raw = images.read_bytes()
    images.write_bytes(raw[:cut])
    with pytest.raises(ValueError, match=r"\[FashionMNIST\] .*train-images-idx3-ubyte.gz: corrupt or truncated gzip"):
        FashionMNIST(tmp_path)


def test_bad_arguments(tmp_path):
    write_dataset(tmp_path, gz=False)
    with pytest.raises(TypeError, match=r"\[MNIST\] root must be a str or os.PathLike, got int"):
        MNIST(3)
    ds = MNIST(tmp_path)
    with pytest.raises(IndexError, match="out of bounds"):
        ds[7]
    with pytest.raises(TypeError, match=r"\[MNIST\] index must be an int, got str"):
        ds["a"]
    for transform in (None, lambda img: img):
        ds = MNIST(tmp_path, transform=transform)
        with pytest.raises(IndexError, match=r"\[MNIST\] index 7 is out of range for a dataset of length 7"):
            ds.__getitems__([0, 7])
        with pytest.raises(IndexError, match=r"\[MNIST\] index -8 is out of range for a dataset of length 7"):
            ds.__getitems__([-8])
