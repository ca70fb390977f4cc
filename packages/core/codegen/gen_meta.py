"""Writes src/meta_generated.cpp: each op's meta step from its table rules (Note [Meta step]).

For an op with `dtype:` and `shape:` rules (and optional `checks:`) in ops.yaml:
  * the check step `<op>_check`, when the op has checks (or is in-place):
    the dispatcher calls it on every device path before the device kernel, so a
    kernel may assume what it checks;
  * the Meta kernel `<op>_meta`: same-device check, dtype and shape rules, then
    storage-less outputs (an in-place op checks that its result fits self).
Called by gen_core.py; the vocabulary is in flambeau/meta.h and model.py.
"""

from __future__ import annotations

import re

from model import FIXED_DTYPES, OPTIONAL_RESULT_SHAPES, PER_RESULT_SHAPES, SHAPE_FUNCTIONS, OpDecl, Rule, TableError


def _tensors(names: list[str]) -> str:
    return "{" + ", ".join(f"&{n}" for n in names) + "}"


def dtype_expr(op: OpDecl, rule: Rule) -> str:
    """The C++ expression of one dtype rule."""
    if rule.name in FIXED_DTYPES:
        return f"ScalarType::{FIXED_DTYPES[rule.name]}"
    self_name = rule.args[0] if rule.args else "self"
    if rule.name == "promote":
        return f"meta::promote({_tensors(rule.args)})"
    if rule.name == "float":
        return f"meta::float_valued({_tensors(rule.args)})"
    if rule.name == "same":
        return f"{self_name}.dtype()"
    if rule.name == "real":
        return f"to_real_dtype({self_name}.dtype())"
    if rule.name == "clamp":
        return f"meta::clamp_dtype({self_name}, min, max)"
    if rule.name == "accumulate":
        return f"meta::accumulate({self_name}, dtype)"
    if rule.name == "promote_list":
        return f"meta::promote_list({self_name})"
    if rule.name == "div_mode":
        return f"meta::div_mode_dtype({_tensors(rule.args)}, rounding_mode)"
    raise TableError(f"ops.yaml:{op.line}: dtype rule '{rule.name}' has no C++ form")


def shape_expr(op: OpDecl, rule: Rule) -> str:
    """The C++ expression of the shape rule."""
    name = f'"{_name(op)}"'
    first = rule.args[0] if rule.args else "self"
    if rule.name in SHAPE_FUNCTIONS:
        return f"meta::{rule.name}({name}, {', '.join(rule.args)})"
    if rule.name == "broadcast":
        return f"meta::broadcast({name}, {_tensors(rule.args)})"
    if rule.name == "same":
        return f"Shape({first}.sizes().begin(), {first}.sizes().end())"
    if rule.name == "scalar":
        return "Shape{}"
    if rule.name in ("reduce", "reduce_dim"):
        return f"meta::{rule.name}({name}, {first}, dim, keepdim)"
    if rule.name in ("mm", "bmm"):
        return f"meta::{rule.name}({name}, {rule.args[0]}, {rule.args[1]})"
    raise TableError(f"ops.yaml:{op.line}: shape rule '{rule.name}' has no C++ form")


def _name(op: OpDecl) -> str:
    """The op's name in the meta step's messages."""
    return op.errors_as or op.name


def _params(op: OpDecl) -> str:
    return ", ".join(f"{a.cpp_type} {a.name}" for a in op.cpp_args)


def _check_lines(op: OpDecl) -> list[str]:
    """The checks; `result` (the first output's dtype rule) is computed when a check or the in-place test reads it."""
    lines = []
    if op.is_inplace or any(re.search(r"\bresult\b", args) for _, args in op.checks):
        lines.append(f"  const ScalarType result = {dtype_expr(op, op.dtype[0])};")
    for name, args in op.checks:
        lines.append(f'  meta::check_{name}("{_name(op)}"{", " + args if args else ""});')
    if op.is_inplace:
        lines.append(f'  meta::check_inplace_dtype("{_name(op)}", self, result);')
    return lines


def has_check_step(op: OpDecl) -> bool:
    return op.has_meta and (bool(op.checks) or op.is_inplace)


def check_step(op: OpDecl) -> list[str]:
    lines = [f"void {op.cpp_name}_check({_params(op)}) {{"]
    lines += _check_lines(op)
    lines.append("}")
    return lines


def meta_kernel(op: OpDecl) -> list[str]:
    tensors = [a.name for a in op.cpp_args if a.type in ("Tensor", "TensorOrNumber")]
    ret = op.cpp_return()
    lines = [f"{ret} {op.cpp_name}_meta({_params(op)}) {{"]
    lines.append(f'  meta::check_same_device("{_name(op)}", {_tensors(tensors)});')
    shape = shape_expr(op, op.shape)
    if op.is_inplace:
        inputs = op.shape.args
        if op.shape.name == "broadcast":
            lines.append(f'  meta::check_broadcasts_to("{_name(op)}", {_tensors(inputs)}, self);')
        lines.append("  self.impl()->bump_version();")
        lines.append("  return self;")
    elif len(op.returns) == 1:
        lines.append(f'  return meta::empty({shape}, {dtype_expr(op, op.dtype[0])}, "{_name(op)}");')
    elif op.shape.name in OPTIONAL_RESULT_SHAPES:
        lines.append(f"  const meta::OptionalShapes shapes = {shape};")
        outs = ", ".join(
            f'shapes[{i}] ? meta::empty(*shapes[{i}], {dtype_expr(op, r)}, "{_name(op)}") : Tensor()'
            for i, r in enumerate(op.dtype)
        )
        lines.append(f"  return {{{outs}}};")
    elif op.shape.name in PER_RESULT_SHAPES:
        lines.append(f"  const std::vector<Shape> shapes = {shape};")
        outs = ", ".join(
            f'meta::empty(shapes[{i}], {dtype_expr(op, r)}, "{_name(op)}")' for i, r in enumerate(op.dtype)
        )
        lines.append(f"  return {{{outs}}};")
    else:
        lines.append(f"  const Shape shape = {shape};")
        outs = ", ".join(f'meta::empty(shape, {dtype_expr(op, r)}, "{_name(op)}")' for r in op.dtype)
        lines.append(f"  return {{{outs}}};")
    lines.append("}")
    return lines


def gen_meta(ops: list[OpDecl], header: str) -> str:
    out = [header, "// Note [Meta step] (flambeau/meta.h): the check steps and Meta kernels of ops.yaml's rules.", ""]
    out += ['#include "flambeau/meta.h"', '#include "flambeau/ops.h"', ""]
    out += [
        "// A rule reads only some of an op's arguments.",
        '#pragma GCC diagnostic ignored "-Wunused-parameter"',
        "",
    ]
    out += ["namespace flambeau {", "namespace {", ""]
    with_rules = [op for op in ops if op.has_meta]
    for op in with_rules:
        if op.kind != "primitive":
            raise TableError(f"ops.yaml:{op.line}: only primitives take rules (a {op.kind} op composes others)")
        if has_check_step(op):
            out += check_step(op) + [""]
        out += meta_kernel(op) + [""]
    out.append("const bool registered = [] {")
    for op in with_rules:
        if has_check_step(op):
            out.append(f"  op::{op.cpp_name}.set_meta_check({op.cpp_name}_check);")
        out.append(f"  op::{op.cpp_name}.register_kernel(DispatchKey::Meta, {op.cpp_name}_meta);")
    out += ["  return true;", "}();", "", "}  // namespace", "}  // namespace flambeau", ""]
    return "\n".join(out)
