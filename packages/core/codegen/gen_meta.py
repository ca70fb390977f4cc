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

from model import (
    DTYPE_SETS,
    FIXED_DTYPES,
    OPTIONAL_RESULT_SHAPES,
    PER_RESULT_SHAPES,
    SHAPE_FUNCTIONS,
    OpDecl,
    Rule,
    TableError,
    structured_base,
)


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
    if rule.name == "complex":
        return f"to_complex_dtype({self_name}.dtype())"
    if rule.name == "clamp":
        return f"meta::clamp_dtype({self_name}, min, max)"
    if rule.name == "accumulate":
        return f"meta::accumulate({self_name}, dtype)"
    if rule.name == "promote_list":
        return f"meta::promote_list({self_name})"
    if rule.name == "div_mode":
        return f"meta::div_mode_dtype({_tensors(rule.args)}, rounding_mode)"
    if rule.name == "batch_norm_stats":
        return f"meta::batch_norm_stats({', '.join(rule.args)})"
    if rule.name == "real_float":
        return f"meta::real_float({self_name})"
    if rule.name == "index_int":
        return "(out_int32 ? ScalarType::Int32 : ScalarType::Int64)"
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
    reads_result = op.dtypes and op.dtype[0].name not in FIXED_DTYPES
    if op.is_inplace or reads_result or any(re.search(r"\bresult\b", args) for _, args in op.checks):
        lines.append(f"  const ScalarType result = {dtype_expr(op, op.dtype[0])};")
    for name, args in op.checks:
        lines.append(f'  meta::check_{name}("{_name(op)}"{", " + args if args else ""});')
    if op.dtypes:
        lines.append(_dtypes_check(op))
    if op.is_inplace:
        lines.append(f'  meta::check_inplace_dtype("{_name(op)}", self, result);')
    return lines


def _dtypes_check(op: OpDecl) -> str:
    """Note [Dtype coverage]: the dtype the op computes in is its result's (promote, float, same, ...), or
    for a fixed-dtype result (signbit's bool) the promoted dtype of the tensors its rule reads."""
    rule = op.dtype[0]
    computed = f"meta::promote({_tensors(rule.args)})" if rule.name in FIXED_DTYPES else "result"
    allowed = " | ".join(DTYPE_SETS[d] for d in op.dtypes)
    inputs = _tensors(_tensor_names(op))
    return f'  meta::check_dtypes("{_name(op)}", {computed}, {allowed}, {inputs});'


def has_check_step(op: OpDecl) -> bool:
    return op.has_meta and (bool(op.checks) or op.is_inplace or bool(op.dtypes))


def check_step(op: OpDecl) -> list[str]:
    lines = [f"void {op.cpp_name}_check({_params(op)}) {{"]
    lines += _check_lines(op)
    lines.append("}")
    return lines


def _meta_output(op: OpDecl, shape: str, rule: Rule) -> str:
    """A storage-less result: contiguous, or laid out by a structured op's layout rule as its device
    kernels lay it out (Note [Result layout]), after the size check under the op's name."""
    dtype = dtype_expr(op, rule)
    if not op.structured or op.layout_rule.name == "contiguous":
        return f'meta::empty({shape}, {dtype}, "{_name(op)}")'
    return _new_output(op, f'checked_sizes({shape}, {dtype}, "{_name(op)}")', dtype, "Device(DeviceType::Meta)")


# A meta result laid out by a layout rule: its shape, once checked as meta::empty checks it.
CHECKED_SIZES = """IntArrayRef checked_sizes(IntArrayRef sizes, ScalarType dtype, const char* op) {
  shape_nbytes(sizes, dtype, op);
  return sizes;
}
"""


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
        lines.append(f"  const Shape shape = {shape};")
        lines.append(f"  return {_meta_output(op, 'shape', op.dtype[0])};")
    elif op.shape.name in OPTIONAL_RESULT_SHAPES:
        lines.append(f"  const meta::OptionalShapes shapes = {shape};")
        outs = ", ".join(
            f"shapes[{i}] ? {_meta_output(op, f'*shapes[{i}]', r)} : Tensor()" for i, r in enumerate(op.dtype)
        )
        lines.append(f"  return {{{outs}}};")
    elif op.shape.name in PER_RESULT_SHAPES:
        lines.append(f"  const std::vector<Shape> shapes = {shape};")
        outs = ", ".join(_meta_output(op, f"shapes[{i}]", r) for i, r in enumerate(op.dtype))
        lines.append(f"  return {{{outs}}};")
    else:
        lines.append(f"  const Shape shape = {shape};")
        outs = ", ".join(_meta_output(op, "shape", r) for r in op.dtype)
        lines.append(f"  return {{{outs}}};")
    lines.append("}")
    return lines


# ---- Note [Structured kernels] (flambeau/dispatch.h) ----


def _tensor_names(op: OpDecl) -> list[str]:
    return [a.name for a in op.cpp_args if a.type in ("Tensor", "TensorOrNumber")]


def _device_expr(op: OpDecl) -> str:
    """The output's device: the tensor arguments' (meta::output_device), or a list op's (cat) its list's."""
    names = _tensor_names(op)
    lists = [a.name for a in op.cpp_args if a.type == "Tensor[]"]
    if not names and lists:
        return f"list_output_device({lists[0]})"
    return f"meta::output_device({_tensors(names)})"


# A structured op whose only tensors are a list (cat): its output's device, by output_device's rule. The
# shape rule has refused an empty list before this runs.
LIST_OUTPUT_DEVICE = """Device list_output_device(const TensorList& ts) {
  for (const Tensor& t : ts)
    if (!(t.device().is_cpu() && t.dim() == 0)) return t.device();
  return ts.front().device();
}
"""


def _shape_ref(op: OpDecl) -> tuple[list[str], str]:
    """Lines and an IntArrayRef expression of the output shape, without a copy for `same`, `sizes` and
    `broadcast`."""
    rule = op.shape
    if rule.name == "same":
        return [], f"{rule.args[0] if rule.args else 'self'}.sizes()"
    if rule.name == "sizes":  # an int[] argument (a backward's input_size) is the shape as it is
        return [], rule.args[0]
    if rule.name == "broadcast":
        return ["  Shape storage;"], f'meta::broadcast_into("{_name(op)}", {_tensors(rule.args)}, storage)'
    return [f"  const Shape shape = {shape_expr(op, rule)};"], "shape"


def _result_shapes(op: OpDecl) -> tuple[list[str], list[str]]:
    """Lines computing a multi-result op's shapes, and each result's shape (a std::optional where the
    rule may leave a result out)."""
    n = len(op.returns)
    if op.shape.name in OPTIONAL_RESULT_SHAPES:
        return [f"  const meta::OptionalShapes shapes = {shape_expr(op, op.shape)};"], [
            f"shapes[{i}]" for i in range(n)
        ]
    if op.shape.name in PER_RESULT_SHAPES:
        return [f"  const std::vector<Shape> shapes = {shape_expr(op, op.shape)};"], [f"shapes[{i}]" for i in range(n)]
    pre, shape = _shape_ref(op)
    return [*pre, f"  const IntArrayRef out_sizes = {shape};"], ["out_sizes"] * n


def _new_output(op: OpDecl, sizes: str, dtype: str, device: str) -> str:
    """A new output laid out by the op's layout rule (Note [Result layout], flambeau/result_layout.h)."""
    rule = op.layout_rule
    if rule.name == "elementwise":
        return f"empty_elementwise({sizes}, {dtype}, {device}, {_tensors(rule.args)})"
    if rule.name == "suggest":
        return f"empty_in_format({sizes}, {dtype}, {device}, suggest_memory_format({rule.args[0]}))"
    if rule.name == "suggest_unless_contiguous":
        a = rule.args[0]
        fmt = f"{a}.is_contiguous() ? MemoryFormat::Contiguous : suggest_memory_format({a})"
        return f"empty_in_format({sizes}, {dtype}, {device}, {fmt})"
    if rule.name == "conv_format":
        return f"empty_in_format({sizes}, {dtype}, {device}, conv_memory_format({rule.args[0]}, {rule.args[1]}))"
    if rule.name == "preserve":  # the result has that tensor's shape and device (Note [Preserving a layout])
        return f"empty_like_in({rule.args[0]}, {dtype}, MemoryFormat::Preserve)"
    if rule.name == "suggest_list":
        lists = [a.name for a in op.cpp_args if a.type == "Tensor[]"]
        return f"empty_in_format({sizes}, {dtype}, {device}, cat_memory_format({lists[0]}))"
    return f"op::empty({sizes}, {dtype}, {device})"


def structured_adapter_multi(op: OpDecl) -> list[str]:
    """The device kernel of a structured op with several results: every output allocated from the rules
    (undefined where an optional rule leaves one out), then the one out kernel on all of them."""
    lines = [f"{op.cpp_return()} {op.cpp_name}_structured({_params(op)}) {{"]
    pre, shapes = _result_shapes(op)
    lines += pre
    optional = op.shape.name in OPTIONAL_RESULT_SHAPES
    for i, rule in enumerate(op.dtype):
        lines.append(f"  const ScalarType dtype{i} = {dtype_expr(op, rule)};")
        # Note [Size overflow]: a result too large to count raises under the op's name.
        check = f'shape_nbytes({"*" if optional else ""}{shapes[i]}, dtype{i}, "{_name(op)}");'
        lines.append(f"  if ({shapes[i]}) {check}" if optional else f"  {check}")
    lines.append(f'  meta::check_same_device("{_name(op)}", {_tensors(_tensor_names(op))});')
    if op.layout_rule.name != "preserve":  # preserve takes the device of the tensor it names
        lines.append(f"  const Device device = meta::output_device({_tensors(_tensor_names(op))});")
    for i in range(len(op.returns)):
        empty = _new_output(op, f"{'*' if optional else ''}{shapes[i]}", f"dtype{i}", "device")
        lines.append(f"  Tensor out{i} = {f'{shapes[i]} ? {empty} : Tensor()' if optional else empty};")
    outs = ", ".join(f"out{i}" for i in range(len(op.returns)))
    call = "".join(f", {a.name}" for a in op.cpp_args)
    lines.append(f"  op::{op.cpp_name}.run_out({{{outs}}}{call});")
    lines.append(f"  return {{{outs}}};")
    lines.append("}")
    return lines


def structured_adapter(op: OpDecl, base: OpDecl | None) -> list[str]:
    """The device kernel of a structured op: the output (allocated, or self), then the out kernel."""
    if len(op.returns) > 1:
        return structured_adapter_multi(op)
    lines = [f"{op.cpp_return()} {op.cpp_name}_structured({_params(op)}) {{"]
    if base is not None:  # in-place: self is the output; the check step checked its dtype
        others = [n for n in op.shape.args if n != "self"]
        if op.shape.name == "broadcast" and others:
            lines.append(f'  meta::check_broadcasts_to("{_name(op)}", {_tensors(others)}, self);')
        lines.append(f'  meta::check_same_device("{_name(op)}", {_tensors(_tensor_names(op))});')
        lines.append(f'  check_no_internal_overlap(self, "{_name(op)}");')
        call = ", ".join(["self"] + [a.name for a in op.cpp_args])
        lines.append(f"  op::{base.cpp_name}.run_out({call});")
        lines.append("  self.impl()->bump_version();")
        lines.append("  return self;")
    else:
        pre, shape = _shape_ref(op)
        lines += pre
        lines.append(f"  const IntArrayRef out_sizes = {shape};")
        lines.append(f"  const ScalarType out_dtype = {dtype_expr(op, op.dtype[0])};")
        # Note [Size overflow]: a broadcast (or expanded) result too large to count raises under the op's name.
        lines.append(f'  shape_nbytes(out_sizes, out_dtype, "{_name(op)}");')
        tensors = _tensors(_tensor_names(op))
        # The dispatcher chose the first non-cpu device; a cpu input of another shape is an error.
        lines.append(f'  meta::check_same_device("{_name(op)}", {tensors});')
        lines.append(f"  Tensor out = {_new_output(op, 'out_sizes', 'out_dtype', _device_expr(op))};")
        call = ", ".join(["out"] + [a.name for a in op.cpp_args])
        lines.append(f"  op::{op.cpp_name}.run_out({call});")
        lines.append("  return out;")
    lines.append("}")
    return lines


def _spec_type(op: OpDecl) -> str:
    """One OutputSpec, or one per result of a multi-result op."""
    return f"std::array<OutputSpec, {len(op.returns)}>" if len(op.returns) > 1 else "OutputSpec"


def output_spec(op: OpDecl) -> list[str]:
    """structured::<op>: the check step, dtype, device and shape (of each result), for out= and the
    in-place composite."""
    lines = [f"{_spec_type(op)} {op.cpp_name}({_params(op)}) {{"]
    if has_check_step(op):
        lines.append(f"  {op.cpp_name}_check({', '.join(a.name for a in op.cpp_args)});")
    lines.append(f'  meta::check_same_device("{_name(op)}", {_tensors(_tensor_names(op))});')
    if len(op.returns) > 1:
        lines += _output_specs(op, f"meta::output_device({_tensors(_tensor_names(op))})")
    else:
        dtype = dtype_expr(op, op.dtype[0])
        device = _device_expr(op)
        lines.append(f"  return {{{dtype}, {device}, {shape_expr(op, op.shape)}}};")
    lines.append("}")
    return lines


def _output_specs(op: OpDecl, device: str) -> list[str]:
    """Every result's spec (all defined: model.py gives no out= to results that may be absent)."""
    lines = [f"  const Device device = {device};"]
    n = len(op.returns)
    if op.shape.name in PER_RESULT_SHAPES:
        lines.append(f"  std::vector<Shape> shapes = {shape_expr(op, op.shape)};")
        shapes = [f"std::move(shapes[{i}])" for i in range(n)]
    else:
        lines.append(f"  Shape shape = {shape_expr(op, op.shape)};")
        shapes = ["shape"] * (n - 1) + ["std::move(shape)"]
    specs = ", ".join(
        f"OutputSpec{{{dtype_expr(op, r)}, device, {sh}}}" for r, sh in zip(op.dtype, shapes, strict=True)
    )
    lines.append(f"  return {{{specs}}};")
    return lines


def has_output_spec(op: OpDecl) -> bool:
    """Whether structured::<op> exists: for out= and the in-place composites, so not for an in-place
    primitive, nor for results that may be absent (model.py gives those no out=)."""
    return op.structured and not op.is_inplace and op.shape.name not in OPTIONAL_RESULT_SHAPES


def output_spec_declaration(op: OpDecl) -> str:
    return f"FB_API {_spec_type(op)} {op.cpp_name}({_params(op)});"


def gen_meta(ops: list[OpDecl], header: str) -> str:
    out = [header, "// Note [Meta step] (flambeau/meta.h): the check steps and Meta kernels of ops.yaml's rules.", ""]
    out += ['#include "flambeau/meta.h"', '#include "flambeau/ops.h"', '#include "flambeau/result_layout.h"']
    out += ['#include "flambeau/type_dispatch.h"', ""]
    out += [
        "// A rule reads only some of an op's arguments.",
        '#pragma GCC diagnostic ignored "-Wunused-parameter"',
        "",
    ]
    out += ["namespace flambeau {", "namespace {", ""]
    if any(op.structured and _device_expr(op).startswith("list_") for op in ops if op.has_meta):
        out += [LIST_OUTPUT_DEVICE]
    out += [CHECKED_SIZES]
    with_rules = [op for op in ops if op.has_meta]
    for op in with_rules:
        if op.kind != "primitive":
            raise TableError(f"ops.yaml:{op.line}: only primitives take rules (a {op.kind} op composes others)")
        if has_check_step(op):
            out += check_step(op) + [""]
        out += meta_kernel(op) + [""]
        if op.structured:
            out += structured_adapter(op, structured_base(op, ops)) + [""]
    out.append("const bool registered = [] {")
    for op in with_rules:
        if has_check_step(op):
            out.append(f"  op::{op.cpp_name}.set_meta_check({op.cpp_name}_check);")
        out.append(f"  op::{op.cpp_name}.register_kernel(DispatchKey::Meta, {op.cpp_name}_meta);")
        if op.structured:
            base = structured_base(op, ops)
            extra = f", op::{base.cpp_name}" if base else ""
            out.append(f"  op::{op.cpp_name}.set_structured({op.cpp_name}_structured{extra});")
    out += ["  return true;", "}();", "", "}  // namespace", ""]
    out.append("// Note [Structured kernels]: the meta step of each structured op, for a caller with its own output.")
    out.append("namespace structured {")
    for op in with_rules:
        if has_output_spec(op):
            out += output_spec(op) + [""]
    out += ["}  // namespace structured", "}  // namespace flambeau", ""]
    return "\n".join(out)
