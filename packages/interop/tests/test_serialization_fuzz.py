"""Random byte mutations of valid checkpoints: load either succeeds or raises a
``[load]`` error of the documented types; it never crashes, hangs or runs code.

The mutations run in a child process, so a crash (a segfault in a rebuild, an
out-of-bounds read) fails the test instead of killing pytest."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    r"""
    import io, os, pickle, random, sys
    import flambeau_core as fc
    import torch
    from flambeau_interop import serialization as ser

    seed, count, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    marker = sys.argv[4]

    class Hostile:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    x = fc.arange(24.0).reshape(4, 6)
    obj = {"x": x, "view": x[1:, ::2], "i": fc.arange(5, dtype=fc.int64), "b": fc.ones(3, dtype=fc.bfloat16),
           "u": fc.arange(3, dtype=fc.uint16), "meta": [1, "two", (3.0, None)], "e": fc.empty((0, 2))}
    buf = io.BytesIO()
    if kind == "flambeau":
        ser.save(obj, buf)
    elif kind == "legacy":
        tobj = {"x": torch.arange(24.0).reshape(4, 6), "n": [1, "two"], "i": torch.arange(5)}
        tobj["view"] = tobj["x"][1:, ::2]
        torch.save(tobj, buf, _use_new_zipfile_serialization=False)
    elif kind == "torch_zip":
        tobj = {"x": torch.arange(24.0).reshape(4, 6), "n": [1, "two"], "b": torch.ones(3, dtype=torch.bfloat16),
                "u": torch.arange(3).to(torch.uint16), "s": torch.Size([2, 3]), "c": torch.tensor([1j])}
        tobj["view"] = tobj["x"].t()
        torch.save(tobj, buf)
    else:  # a hostile file: mutations must not make it run code either
        torch.save({"x": torch.arange(24.0).reshape(4, 6), "n": [1, "two"], "h": Hostile()}, buf)
    good = buf.getvalue()
    rng = random.Random(seed)
    outcomes = {"loaded": 0, "refused": 0}
    for i in range(count):
        data = bytearray(good)
        for _ in range(rng.choice((1, 1, 2, 4, 16))):
            how = rng.random()
            pos = rng.randrange(len(data))
            if how < 0.6:
                data[pos] = rng.randrange(256)
            elif how < 0.8:
                del data[pos : pos + rng.randrange(1, 64)]
            elif how < 0.9:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
            else:
                data = data[:pos]
            if not data:
                data = bytearray(b"\0")
        try:
            ser.load(io.BytesIO(bytes(data)), weights_only=True)
            outcomes["loaded"] += 1
        except (fc.FlambeauError, pickle.UnpicklingError, TypeError) as e:
            if not str(e).startswith("[load]"):
                print(f"mutation {i}: unprefixed {type(e).__name__}: {e}")
                sys.exit(1)
            outcomes["refused"] += 1
        except Exception as e:  # anything else is a bug: an unhandled path through the loader
            print(f"mutation {i}: {type(e).__name__}: {e}")
            sys.exit(1)
    print(outcomes)
    """
)


@pytest.mark.parametrize(("kind", "seed"), [("flambeau", 1), ("torch_zip", 2), ("legacy", 3), ("hostile", 4)])
def test_mutated_checkpoints_fail_cleanly(tmp_path, kind, seed):
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(seed), "400", kind, str(marker)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, f"child exited {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert not marker.exists(), "a mutated checkpoint ran code"
    assert "refused" in proc.stdout
