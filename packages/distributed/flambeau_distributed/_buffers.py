"""Buffers: tensors handed to MPI without copies, MPI's types and reductions for flambeau's dtypes."""

from __future__ import annotations

import ctypes
from typing import Any

import flambeau_core as fc
from flambeau_core import Tensor

from flambeau_distributed._backend import (
    _REDUCE_OPS,
)


def _mpi_type(MPI, dtype, name: str) -> Any:
    table = {
        fc.float32: MPI.FLOAT,
        fc.float64: MPI.DOUBLE,
        fc.int8: MPI.INT8_T,
        fc.uint8: MPI.UINT8_T,
        fc.int16: MPI.INT16_T,
        fc.int32: MPI.INT32_T,
        fc.int64: MPI.INT64_T,
        fc.bool: MPI.C_BOOL,
        # 16-bit floats move as their bit patterns (no MPI reduction for them: see _Buf)
        fc.float16: MPI.INT16_T,
        fc.bfloat16: MPI.INT16_T,
    }
    if dtype not in table:
        known = ", ".join(str(d).replace("flambeau.", "") for d in table)
        raise TypeError(f"[{name}] the MPI backend takes tensors of dtype {known}; got {dtype}")
    return table[dtype]


_HALF = (fc.float16, fc.bfloat16)


class _Buf:
    """An MPI message spec over a tensor's own memory; a staging copy only when it can't be (see README)."""

    def __init__(self, MPI, t: Tensor, reduce: bool, name: str) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] expected a Tensor, got {type(t).__name__}")
        if not t.device.type == "cpu":
            raise TypeError(f"[{name}] the MPI backend takes cpu tensors, got one on {t.device}")
        self.tensor = t
        kind = _mpi_type(MPI, t.dtype, name)
        base = t.detach()
        # Non-contiguous: MPI needs one block, so a contiguous copy goes and comes back.
        self.stage: Tensor | None = None if t.is_contiguous() else base.contiguous()
        target = self.stage if self.stage is not None else base
        if t.dtype in _HALF and target.numel():
            if reduce:
                raise TypeError(
                    f"[{name}] MPI has no reduction for {t.dtype}; reduce float32 (DDP's fp16/bf16 compression hooks "
                    "gather the compressed values and sum them in float32)"
                )
            # no buffer protocol for 16-bit floats: the memory goes to MPI through its address
            self.mv = memoryview((ctypes.c_int16 * target.numel()).from_address(target.data_ptr()))
        else:
            self.mv = memoryview(target) if target.numel() > 0 else memoryview(bytearray(0))
        # [buffer, datatype]: mpi4py derives the counts (per rank for Allgather/Reduce_scatter_block).
        self.spec = [self.mv, kind]
        self.count = target.numel()
        self.kind = kind

    def write_back(self) -> None:
        if self.stage is not None:
            with _no_grad():
                self.tensor.detach().copy_(self.stage)


def _no_grad():
    try:
        import flambeau_autograd

        return flambeau_autograd.no_grad()
    except ImportError:  # pragma: no cover - autograd is a dependency
        import contextlib

        return contextlib.nullcontext()


def _mpi_op(MPI, op: str, dtype, name: str):
    if op not in _REDUCE_OPS:
        raise ValueError(f"[{name}] unknown reduce op {op!r}; expected one of {sorted(_REDUCE_OPS)}")
    if dtype == fc.bool:
        table = {"SUM": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR, "PRODUCT": MPI.LAND, "MIN": MPI.LAND}
        table |= {"BAND": MPI.LAND, "BXOR": MPI.LXOR}
        if op == "AVG":
            raise TypeError(f"[{name}] ReduceOp.AVG is not defined for bool tensors")
        return table[op]
    if op in ("BAND", "BOR", "BXOR") and dtype.is_floating_point:
        raise TypeError(f"[{name}] ReduceOp.{op} needs an integer or bool tensor, got {dtype}")
    if op == "AVG" and not dtype.is_floating_point:
        raise TypeError(f"[{name}] ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    return {
        "SUM": MPI.SUM,
        "AVG": MPI.SUM,
        "PRODUCT": MPI.PROD,
        "MIN": MPI.MIN,
        "MAX": MPI.MAX,
        "BAND": MPI.BAND,
        "BOR": MPI.BOR,
        "BXOR": MPI.BXOR,
    }[op]


def _divide(buf: _Buf, n: int) -> None:
    """AVG: the sum divided by the world size, in the (possibly staged) buffer."""
    target = buf.stage if buf.stage is not None else buf.tensor.detach()
    with _no_grad():
        target.div_(n)


def _describe(t: Tensor) -> tuple[str, tuple[int, ...]]:
    return (str(t.dtype).replace("flambeau.", ""), tuple(t.shape))
