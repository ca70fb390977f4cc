"""The backward of a fused elementwise group: a generated C++ kernel, and the one autograd node a group records.

Note [Fused backward]
Under grad mode, a fused group (Note [Elementwise fusion] in ``_fusion.py``) whose inputs require grad runs
its forward kernel inside :class:`FusedElementwise` (an ``autograd.Function``: one graph node for the group,
about 10 µs a call, instead of a node per op). Its backward is a second generated kernel, made per set of
inputs that require grad (a parameter may start or stop requiring it) and cached like the forward's: one
loop over the elements recomputes the forward's locals that the derivatives read, then walks the ops
backwards, each op's gradient reaching its operands by the formula of ``_GRAD`` (next to the forward
table in ``_fusion.py``), summed per operand in registers (a tensor read twice gets both contributions),
and stores the gradient of each input that requires grad. Only the inputs those formulas read are saved
for backward (the intermediates are recomputed, never saved: an input only added, such as a residual, is
not kept); no output is saved. An input whose gradient is an output's gradient unchanged (a residual
``+ r``) gets that tensor itself, and inputs whose gradients are the same expression (``relu(a + b)``'s
``a`` and ``b``) share one stored tensor, as eager's add gives both operands its one gradient. A
broadcast input's gradient (a bias, a row value, a one-element tensor) is reduced in the kernel: threads
take fixed blocks of rows (of the last dimension's length, or of 8,192 elements in a group without a bias
or row input; about 16K elements a block), a row value's gradient is its row's sum, a bias's and a
one-element input's are summed per block into a small ``(blocks, C)`` or ``(blocks,)`` tensor that one
``sum`` finishes; the blocks are fixed by the shape, so the result does not depend on the thread count.

An output no differentiable path reaches (a comparison's bool, an op on inputs without grad) is marked
non-differentiable, as eager's would not require grad. Double backward: the backward kernel's results have
no autograd history, so when the backward runs with grad mode on (``create_graph=True``), the node
instead recomputes the group's eager ops on the saved inputs and differentiates them with
``autograd.grad(create_graph=True)``: differentiable, eager's speed. An input the formulas do not read has
no say in any derivative, so there it is a zero tensor of its shape. Inside a forward-mode AD level a
fused group calls its eager ops (they carry the tangents; the node has no ``jvp``).

At capture, the backward kernel of the capture's grad-requiring inputs is built and checked once against
the eager ops' gradients (like the forward, Note [Elementwise fusion]); a failed build or a disagreement
leaves the group unfused. A build that fails later (another set of inputs requiring grad) runs the group's
eager ops.
"""

from __future__ import annotations

import ctypes
import math
import re
from dataclasses import dataclass
from typing import Any

import flambeau_autograd as ag
import flambeau_core as fc
from flambeau_autograd import Function

from . import _cpp_kernel

Tensor = fc.Tensor
is_grad_enabled = fc.is_grad_enabled

_INPUT = re.compile(r"\b[ax](\d+)\b")  # an input's load: a0[i], a2[j], x1 (a hoisted one-element input)
_LOCAL = re.compile(r"\bt(\d+)\b")
_INPUT_OPERAND = re.compile(r"a(\d+)\[[ijr]\]|x(\d+)")


@dataclass
class Step:
    """One op of a group as the kernels see it."""

    var: str  # its local, ``t3`` (the k-th step's is ``tk``)
    line: str  # the forward's line computing it: ``const T t3 = fb_gelu(t2);``
    operands: list[str]  # their C++ text: a local (``t1``), an input (``a0[i]``, ``a2[j]``, ``x1``), a number (``s0``)
    grads: list[str | None]  # per operand, its gradient's template (``_GRAD``)
    compare: bool
    output: int | None  # its position among the group's outputs, if it is one


@dataclass
class Plan:
    """What the backward kernels of a group are generated from (recorded by the forward's code generation)."""

    steps: list[Step]
    numbers: list[str]  # the hoisted lines of the ops' Python numbers
    scalars: dict[int, str]  # the hoisted load of each one-element input
    shapes: list[tuple[int, ...]]  # each input's shape (fixed by the guards)
    heavy: bool  # transcendental ops: a smaller grain per thread
    rows: bool  # a bias or row input: the loop goes by rows


class Backward:
    """The backward kernel of a group for one set of inputs requiring grad (``mask``), and its call."""

    def __init__(self, group: Any, mask: tuple[bool, ...]) -> None:
        plan: Plan = group.plan
        self.group, self.mask = group, mask
        steps = plan.steps
        self.masked = [k for k, m in enumerate(mask) if m]

        def target(operand: str) -> tuple[str, int] | None:
            if _LOCAL.fullmatch(operand):
                return ("t", int(operand[1:]))
            m = _INPUT_OPERAND.fullmatch(operand)
            return ("a", int(m.group(1) or m.group(2))) if m else None

        needs: list[bool] = []

        def requires(t: tuple[str, int] | None) -> bool:
            return t is not None and (mask[t[1]] if t[0] == "a" else needs[t[1]])

        for st in steps:
            needs.append(
                not st.compare
                and any(g is not None and requires(target(o)) for o, g in zip(st.operands, st.grads, strict=True))
            )
        # The gradients, from the last op to the first: a local's is complete when its turn comes.
        terms: list[tuple[str, str]] = []  # (accumulator, expression)
        for k in reversed(range(len(steps))):
            st = steps[k]
            if not needs[k]:
                continue
            for o, g in zip(st.operands, st.grads, strict=True):
                t = target(o)
                if g is None or not requires(t):
                    continue
                assert t is not None
                acc = f"g{t[1]}" if t[0] == "t" else f"D{t[1]}"
                terms.append((acc, g.format(*st.operands, g=f"g{k}", y=st.var)))
        # An input whose gradient is an output's gradient as it comes (a residual ``+ r``) gets that
        # tensor itself: nothing to compute or store.
        self.passthrough: dict[int, int] = {}
        for k in self.masked:
            if group.inputs[k].kind != "full":  # a broadcast input's gradient is reduced in the kernel
                continue
            mine = [e for a, e in terms if a == f"D{k}"]
            same = re.fullmatch(r"g(\d+)", mine[0]) if len(mine) == 1 else None
            j = int(same.group(1)) if same else -1
            if same and steps[j].output is not None and not any(a == f"g{j}" for a, _ in terms):
                self.passthrough[k] = steps[j].output
        terms = [(a, e) for a, e in terms if not (a[0] == "D" and int(a[1:]) in self.passthrough)]
        # Inputs of one shape whose gradients are the same sum of terms (the operands of ``relu(a + b)``)
        # share one stored tensor, as eager's add hands its one gradient to both operands.
        self.alias: dict[int, int] = {}
        first: dict[tuple[str, ...], int] = {}
        for k in self.masked:
            if k in self.passthrough or group.inputs[k].kind != "full":
                continue
            key = tuple(e for a, e in terms if a == f"D{k}")
            if key in first:
                self.alias[k] = first[key]
            else:
                first[key] = k
        terms = [(a, e) for a, e in terms if not (a[0] == "D" and int(a[1:]) in self.alias)]
        self.stored = [k for k in self.masked if k not in self.passthrough and k not in self.alias]
        contributions = [f"{a} += {e};" for a, e in terms]
        # The forward locals the formulas read, and those they are computed from.
        wanted = {int(n) for line in contributions for n in _LOCAL.findall(line)}
        for k in reversed(range(len(steps))):
            if k in wanted:
                wanted.update(int(n) for n in _LOCAL.findall(steps[k].line.split("=", 1)[1]))
        forward = [steps[k].line for k in range(len(steps)) if k in wanted]
        reads = sorted({int(n) for line in forward + contributions for n in _INPUT.findall(line)})
        self.reads = reads
        self.grad_outputs = [st.output for k, st in enumerate(steps) if st.output is not None and needs[k]]
        self.nondiff = [st.output for k, st in enumerate(steps) if st.output is not None and not needs[k]]
        self.n_outputs = len(group.out_values)
        lines = list(forward)
        for k, st in enumerate(steps):
            if needs[k]:
                init = f"go{st.output}[i]" if st.output is not None else "T(0)"
                lines.append(f"T g{k} = {init};")
        lines += [f"T D{k} = T(0);" for k in self.stored]
        lines += contributions
        kinds = {k: group.inputs[k].kind for k in self.stored}
        store = {
            "full": "d{k}[i] = D{k};",
            "bias": "p{k}[j] += D{k};",
            "row": "R{k} += D{k};",
            "scalar": "S{k} += D{k};",
        }
        lines += [store[kinds[k]].format(k=k) for k in self.stored]
        hoisted = plan.numbers + [line for k, line in plan.scalars.items() if k in reads]
        self.reduced = {k: kind for k, kind in kinds.items() if kind != "full"}
        n = math.prod(group.shape)
        # Note [Fused backward]: reduced gradients go by fixed blocks of rows (of ``inner`` elements, or of
        # _CHUNK when no input is a bias or row value), so the sums do not depend on the thread count.
        self.row_len = group.shape[-1] if plan.rows else _CHUNK
        self.nrows = -(-n // self.row_len)
        rows_per_block = max(1, _BLOCK // self.row_len)
        self.nblocks = -(-self.nrows // rows_per_block)
        if self.reduced:
            body = _reduce_body(lines, hoisted, self.reduced, plan.rows)
        else:
            body = _cpp_kernel.loop_body(lines, hoisted, plan.heavy, plan.rows)
        sig = [f"const {'bool' if i.dtype == fc.bool else 'T'}* __restrict a{k}" for k, i in enumerate(group.inputs)]
        sig += [f"const T* __restrict go{m}" for m in range(self.n_outputs)]
        sig += [f"T* __restrict d{k}" for k in self.stored]
        sig.append("const double* __restrict c")
        self.argtypes = [ctypes.c_void_p] * (len(group.inputs) + self.n_outputs + len(self.stored) + 1)
        self.text, self.name = _cpp_kernel.source(body, ", ".join(sig), _cpp_kernel_ctype(group.dtype))
        self.consts = group.consts_array
        self.run: Any = None
        self.source = ""

    def build(self) -> None:
        """Builds (or finds) the kernel (none when every gradient passes through) and makes ``run`` call it;
        ``RuntimeError`` if it cannot be built.

        ``run(saved, grads)`` is generated straight-line code (it runs on every backward): it returns the
        node's gradients, ``None`` for the ``Backward`` argument and each input that does not require grad.
        """
        group = self.group
        env: dict[str, Any] = {"zeros": fc.zeros, "empty_like": fc.empty_like, "empty": fc.empty,
                               "dtype": group.dtype, "shape": group.shape}  # fmt: skip
        if self.stored:
            env["kern"] = _cpp_kernel.kernel(self.text, self.name, self.argtypes)
        lines = [f"{''.join(f'a{k}, ' for k in self.reads)}= saved"] if self.reads else []
        for m in self.grad_outputs:
            lines.append(f"g{m} = grads[{m}]")
            lines.append(f"if g{m} is None:")
            lines.append(f"    g{m} = zeros(shape, dtype=dtype)")
            lines.append(f"elif g{m}.dtype is not dtype or not g{m}.is_contiguous():")
            lines.append(f"    g{m} = g{m}.to(dtype).contiguous()")
        if self.stored:
            like = f"g{self.grad_outputs[0]}"
            sizes = {
                "bias": f"({self.nblocks}, {group.shape[-1]})",
                "row": f"({self.nrows},)",
                "scalar": f"({self.nblocks},)",
            }
            for k in self.stored:
                kind = self.reduced.get(k)
                lines.append(
                    f"d{k} = empty_like({like})" if kind is None else f"d{k} = empty({sizes[kind]}, dtype=dtype)"
                )
            ptrs = [f"a{k}.data_ptr()" if k in self.reads else "None" for k in range(len(group.inputs))]
            ptrs += [f"g{m}.data_ptr()" if m in self.grad_outputs else "None" for m in range(self.n_outputs)]
            ptrs += [f"d{k}.data_ptr()" for k in self.stored]
            ptrs.append(str(ctypes.addressof(self.consts)))
            lines.append(f"kern({', '.join(ptrs)})")
            for k, kind in self.reduced.items():  # the blocks' partial sums, summed; the input's shape
                env[f"shape{k}"] = group.plan.shapes[k]
                partial = f"d{k}" if kind == "row" or self.nblocks == 1 else f"d{k}.sum(0)"
                lines.append(f"d{k} = {partial}.reshape(shape{k})")
        result = ["None"] * len(group.inputs)
        for k, m in self.passthrough.items():
            result[k] = f"g{m}"
        for k in self.stored:
            result[k] = f"d{k}"
        for k, j in self.alias.items():
            result[k] = f"d{j}"
        lines.append(f"return (None, {', '.join(result)},)")
        src = "def run(saved, grads):\n" + "".join(f"    {line}\n" for line in lines)
        exec(compile(src, "<fb.compile fused backward>", "exec"), env)  # noqa: S102 (generated from the graph)
        self.run = env["run"]
        self.source = src

    def differentiable(self, saved: tuple[Tensor, ...], grads: tuple[Any, ...]) -> tuple[Tensor | None, ...]:
        """The gradients with autograd history (``create_graph=True``): the eager ops recomputed and differentiated."""
        group = self.group
        kept = dict(zip(self.reads, saved, strict=True))
        xs = []
        for k, i in enumerate(group.inputs):
            t = kept.get(k)
            if t is None:  # read by no derivative: its value has no say in the gradients
                t = fc.zeros(group.plan.shapes[k], dtype=i.dtype)
                if self.mask[k]:
                    t.requires_grad_(True)
            xs.append(t)
        outs = group.eager(*xs)
        outs = (outs,) if isinstance(outs, Tensor) else tuple(outs)
        pairs = [(outs[m], grads[m]) for m in self.grad_outputs if grads[m] is not None and outs[m].requires_grad]
        result: list[Tensor | None] = [None] * len(group.inputs)
        if pairs:
            got = ag.grad([o for o, _ in pairs], [xs[k] for k in self.masked], [g for _, g in pairs],
                          create_graph=True, allow_unused=True)  # fmt: skip
            for k, g in zip(self.masked, got, strict=True):
                result[k] = g
        return (None, *result)


_CHUNK = 8192  # a block row's length when the group has no bias or row input
_BLOCK = 16384  # about this many elements per block of rows


def _reduce_body(lines: list[str], hoisted: list[str], reduced: dict[int, str], rows: bool) -> str:
    """A backward kernel's body that also reduces broadcast inputs' gradients (Note [Fused backward]):
    threads take whole blocks of rows; per block, a bias input's partial sums go to row ``blk`` of its
    ``(nblocks, inner)`` output and a one-element input's to element ``blk``; a row input's sum is its row's."""
    bias = [k for k, kind in reduced.items() if kind == "bias"]
    row = [k for k, kind in reduced.items() if kind == "row"]
    scalar = [k for k, kind in reduced.items() if kind == "scalar"]
    sums = [f"R{k}" for k in row] + [f"S{k}" for k in scalar]
    body = "  const int64_t n = static_cast<int64_t>(c[0]), inner = static_cast<int64_t>(c[1]);\n"
    body += f"  const int64_t L = {'inner' if rows else _CHUNK}, nrows = (n + L - 1) / L;\n"
    body += f"  const int64_t per = L >= {_BLOCK} ? 1 : {_BLOCK} / L, nblocks = (nrows + per - 1) / per;\n"
    body += "".join(f"{line}\n" for line in hoisted)
    body += "  fb_parallel_for(0, nblocks, 1, [&](int64_t bb, int64_t be) {\n"
    body += "    for (int64_t blk = bb; blk < be; ++blk) {\n"
    for k in bias:
        body += f"      T* __restrict p{k} = d{k} + blk * inner;\n"
        body += f"      for (int64_t j = 0; j < inner; ++j) p{k}[j] = T(0);\n"
    body += "".join(f"      T S{k} = T(0);\n" for k in scalar)
    body += "      const int64_t r_end = (blk + 1) * per < nrows ? (blk + 1) * per : nrows;\n"
    body += "      for (int64_t r = blk * per; r < r_end; ++r) {\n"
    body += "        const int64_t row = r * L, hi = row + L < n ? row + L : n;\n"
    body += "".join(f"        T R{k} = T(0);\n" for k in row)
    body += f"#pragma omp simd{' reduction(+:' + ', '.join(sums) + ')' if sums else ''}\n"
    body += "        for (int64_t i = row; i < hi; ++i) {\n"
    body += "          [[maybe_unused]] const int64_t j = i - row;\n"
    body += "".join(f"          {line}\n" for line in lines)
    body += "        }\n"
    body += "".join(f"        d{k}[r] = R{k};\n" for k in row)
    body += "      }\n"
    body += "".join(f"      d{k}[blk] = S{k};\n" for k in scalar)
    body += "    }\n  });\n"
    return body


def _cpp_kernel_ctype(dtype: Any) -> str:
    return "float" if dtype == fc.float32 else "double"


class FusedElementwise(Function):
    """The autograd node of a fused group (Note [Fused backward]); ``apply(backward, *tensors)``."""

    @staticmethod
    def forward(ctx: Any, bw: Backward, *tensors: Tensor) -> Any:
        outs = bw.group.raw(*tensors)
        ctx.bw = bw
        ctx.save_for_backward(*[tensors[k] for k in bw.reads])
        if bw.nondiff:
            many = outs if isinstance(outs, tuple) else (outs,)
            ctx.mark_non_differentiable(*[many[m] for m in bw.nondiff])
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        if is_grad_enabled():  # create_graph=True: gradients with history
            return ctx.bw.differentiable(ctx.saved_tensors, grads)
        return ctx.bw.run(ctx.saved_tensors, grads)
