"""The op table's data model: parses `ops.yaml` into `OpDecl` objects.

Shared by the generator of core (C++ declarations, dispatcher entries, Python
bindings, stubs: gen_core.py) and the generator of flambeau-autograd (nodes
from `derivatives.yaml`: gen_autograd.py). Only the standard library and
PyYAML are used, because this runs inside CMake at build time.

A signature is written as PyTorch spells it (docs/design/ops.md):

    add(Tensor self, TensorOrNumber other, *, Scalar alpha=1) -> Tensor
    max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
    add_(Tensor(a!) self, TensorOrNumber other, *, Scalar alpha=1) -> Tensor(a!)

`name.overload` names the C++ op `name_overload` and the Python name `name`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

# Signature type -> (C++ parameter type, C++ stored type for autograd, stub type).
# The stored type is what a node keeps when a formula uses the argument.
TYPES: dict[str, tuple[str, str, str]] = {
    "Tensor": ("const Tensor&", "Tensor", "Tensor"),
    "TensorOrNumber": ("const Tensor&", "Tensor", "Tensor | _Number"),
    "Tensor?": ("const std::optional<Tensor>&", "std::optional<Tensor>", "Tensor | None"),
    "Tensor[]": ("const TensorList&", "TensorList", "_Sequence[Tensor]"),
    # out=(a, b) of the ops returning several tensors: Python only (the binding writes the results).
    "Tensor[]?": ("const std::optional<TensorList>&", "std::optional<TensorList>", "_Sequence[Tensor] | None"),
    # Advanced indexing's indices: no gradient flows to them (not in TENSOR_TYPES); C++ only.
    "Tensor?[]": ("const OptionalTensorList&", "OptionalTensorList", "_Sequence[Tensor | None]"),
    "Scalar": ("const Scalar&", "Scalar", "_Number"),
    "Scalar?": ("const std::optional<Scalar>&", "std::optional<Scalar>", "_Number | None"),
    "int": ("int64_t", "int64_t", "int"),
    "int?": ("std::optional<int64_t>", "std::optional<int64_t>", "int | None"),
    "int[]": ("IntArrayRef", "Shape", "_Size"),
    "int[]?": ("OptionalIntArrayRef", "std::optional<Shape>", "_Size | None"),
    "float": ("double", "double", "float"),
    "float?": ("std::optional<double>", "std::optional<double>", "float | None"),
    "bool": ("bool", "bool", "bool"),
    "bool?": ("std::optional<bool>", "std::optional<bool>", "bool | None"),
    "ScalarType": ("ScalarType", "ScalarType", "_DType"),
    "ScalarType?": ("std::optional<ScalarType>", "std::optional<ScalarType>", "_DType | None"),
    "MemoryFormat": ("MemoryFormat", "MemoryFormat", "memory_format"),
    "MemoryFormat?": ("std::optional<MemoryFormat>", "std::optional<MemoryFormat>", "memory_format | None"),
    "Device": ("Device", "Device", "_Device"),
    "Device?": ("std::optional<Device>", "std::optional<Device>", "_Device | None"),
    "Generator?": ("Generator*", "Generator*", "Generator | None"),
    # A factory's layout= (Python only, never passed to C++: a Tensor is strided): None or flambeau.strided;
    # the binding refuses any other layout (sparse_coo, ...) naming the op (ParsedArgs::check_layout).
    "Layout?": ("", "", "_Layout | None"),
    "str": ("std::string_view", "std::string", "str"),
    "str?": ("std::optional<std::string_view>", "std::optional<std::string>", "str | None"),
}
# Python name of a memory format -> its C++ enumerator (flambeau/memory_format.h).
MEMORY_FORMATS = {
    "contiguous_format": "Contiguous",
    "preserve_format": "Preserve",
    "channels_last": "ChannelsLast",
    "channels_last_3d": "ChannelsLast3d",
}
RETURN_TYPES = {"Tensor": "Tensor", "Tensor[]": "TensorList", "bool": "bool", "int": "int64_t", "float": "double"}
TENSOR_TYPES = {"Tensor", "TensorOrNumber", "Tensor?", "Tensor[]"}
PYTHON_FORMS = {"function", "method"}
KINDS = {"primitive", "composite", "generic"}

# Note [Meta step] (flambeau/meta.h): the vocabulary of the `dtype:` and `shape:` rules.
# A rule may name the tensor arguments it reads, `promote(self, other)`; by default it
# reads every Tensor/TensorOrNumber argument.
DTYPE_RULES = {
    "promote": "the result_type of the tensor arguments",
    "float": "promote, then integer and bool become the default float dtype",
    "same": "self's dtype",
    "real": "self's dtype, complex becoming its real counterpart (abs)",
    "complex": "self's dtype, real becoming its complex counterpart (the real-to-complex FFTs)",
    "bool": "bool",
    "accumulate": "dtype= if given, else int64 for integer and bool inputs, else self's dtype",
    "clamp": "promote self with the min and max bounds as Python numbers",
    "promote_list": "promote_types over a Tensor[] argument's dtypes (cat)",
    "div_mode": "div with a rounding_mode: float without one (true division), else promote",
    "batch_norm_stats": "batch norm's statistics: float32 for a float16/bfloat16 input with float32 parameters",
    "real_float": "integer and bool become the default float dtype, complex its real counterpart (angle)",
    "index_int": "int32 with out_int32, else int64 (searchsorted)",
}
# Note [Dtype coverage] (flambeau/meta.h): `dtypes:` lists the dtypes an op computes in, as sets of
# flambeau/type_dispatch.h; the check step refuses any other on every device (absent: every dtype).
DTYPE_SETS = {
    "bool": "kDtBool", "ints": "kDtInts", "uints": "kDtUInts", "floats": "kDtFloats", "half": "kDtHalf",
    "complex": "kDtComplex", "real": "kDtReal",
}  # fmt: skip
# A fixed dtype: its name in the table -> the C++ enumerator.
FIXED_DTYPES = {
    "bool": "Bool", "uint8": "UInt8", "int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
    "float16": "Float16", "bfloat16": "BFloat16", "float32": "Float32", "float64": "Float64",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip
SHAPE_RULES = {
    "broadcast": "the broadcast shape of the tensor arguments",
    "same": "self's shape",
    "reduce": "a reduction over `dim` (int[]?, all if none or empty) with `keepdim`",
    "reduce_dim": "a reduction over one `dim` (int or int?: all if none) with `keepdim`",
    "scalar": "0-d",
    "mm": "(n, k) @ (k, m) -> (n, m)",
    "bmm": "(b, n, k) @ (b, k, m) -> (b, n, m)",
}
# Shape functions that give one shape per result (std::vector<Shape>); the others give one for all.
PER_RESULT_SHAPES = {"layer_norm", "cross_entropy", "batch_norm", "group_norm", "feature_dropout", "embedding_bag"}
# The linalg decompositions: a result the arguments do not ask for is (0,), as PyTorch returns it.
PER_RESULT_SHAPES |= {"linalg_factor", "linalg_qr", "linalg_svd", "linalg_eig"}
# The recurrent layer and its backward (which always gives all five gradients: its formula has no output mask).
PER_RESULT_SHAPES |= {"rnn_layer", "rnn_layer_backward"}
# Per-result shape functions whose results may be absent (a norm's backward computes only the gradients asked
# for): std::vector<std::optional<Shape>>, nullopt giving an undefined tensor.
OPTIONAL_RESULT_SHAPES = {"batch_norm_backward", "layer_norm_backward", "group_norm_backward", "linear_backward"}
# Named shape functions over any of the op's arguments, in order: `meta::<name>(op, args...)`
# (flambeau/meta.h), shared by the ops of a family.
SHAPE_FUNCTIONS = {
    "sizes": "the int[] argument it names (a backward's input_size)",
    "pool2d": "pool::check_pool2d's output: a (N, C, H, W) or (C, H, W) input pooled by kernel, stride, padding",
    "adaptive_pool2d": "a (N, C, H, W) or (C, H, W) input pooled to output_size",
    "im2col": "(N, C * kH * kW, L) sliding blocks of a (N, C, H, W) or (C, H, W) input (F.unfold)",
    "col2im": "(N, C, *output_size): (N, C * kH * kW, L) or (C * kH * kW, L) blocks summed into an image (F.fold)",
    "pad_nd": "self's shape with the trailing len(pad) / 2 dims padded (F.pad)",
    "upsample2d": "a (N, C, H, W) input resized to output_size (H, W)",
    "topk": "self's shape with dim of size k (0-d: 0-d)",
    "cdist": "(B, P, R) distances of (B, P, M) and (B, R, M) rows",
    "fft_r2c": "self's shape, the last transformed dim of size n // 2 + 1 when onesided",
    "fft_c2r": "self's shape, the last transformed dim of size last_dim_size",
    "stft": "(batch, frames, n_fft // 2 + 1): stft's frames of a (batch, length) signal",
    "conv": "conv::check_and_output_shape: a 1-D or 2-D convolution or its transpose",
    "layer_norm": "one shape per result: input's, then (*leading, 1, ..., 1) for the mean and rstd",
    "rnn_layer": "_rnn_layer's output (N, H), hy (B, H), cy (B or 0, H) and workspace (N, W * H)",
    "rnn_layer_backward": "the gradients of igates, w_hh, b_hh (or (0,)), hx and cx (LSTM, else (0, H))",
    "linear": "input's leading dims and weight's out_features, broadcast with the bias",
    "loss": "a pointwise loss: the broadcast shape of self and target unreduced (reduction 0), else 0-d",
    "loss_grad": "the broadcast shape of self and target (a pointwise loss's gradient)",
    "class_loss": "a loss over dim 1 of (N, C, d1, ...) (or dim 0 of (C,)): (N, d1, ...) unreduced, else 0-d",
    "cross_entropy": "one shape per result: class_loss's, then (rows,) for the log-sum-exp",
    "cat": "the tensors' shape with their sizes along dim added up (1-D empty tensors skipped)",
    "index_select": "self's shape with dim of the index's length (0-d self: the index's shape)",
    "index": "advanced indexing: the index tensors' broadcast shape among self's other dims (a mask: not on meta)",
    "embedding": "indices' shape, then weight's embedding_dim",
    "embedding_backward": "(num_weights, embedding_dim), embedding_dim being grad_output's last dim",
    "batch_norm": "one shape per result: input's, then (C,) for the saved mean and 1/std ((0,) in evaluation mode)",
    "group_norm": "one shape per result: input's, then (batch, group) for the mean and rstd",
    "batch_norm_backward": "input's shape, (C,), (C,): each gradient only when asked",
    "layer_norm_backward": "input's shape, normalized_shape twice: each gradient only when asked",
    "group_norm_backward": "input's shape, (channels,) twice: each gradient only when asked",
    "glu": "self's shape with dim halved",
    "feature_dropout": "one shape per result: input's, then (N, C, 1, ...) for the channels' mask",
    "embedding_bag": "one shape per result: (bags, dim), (indices,), (bags,), (bags, dim) for mode max else (0,)",
    "embedding_bag_backward": "(num_weights, dim), dim being grad's last dim",
    "linear_backward": "(n, in_features), weight's shape, (out_features,): each gradient only when asked",
    "matrix_batch": "a batch of matrices (*, m, n): its batch dims (*)",
    "linalg_factor": "one shape per result: the matrices' (*, m, n), then (*, min(m, n)) and (*) (LU, LDL, geqrf)",
    "linalg_qr": "one shape per result: Q (*, m, m or k) ((0,) for mode 'r') and R (*, m or k, n), k = min(m, n)",
    "linalg_svd": "one shape per result: U (*, m, m or k), S (*, k), Vh (*, n or k, n); U, Vh (0,) without compute_uv",
    "linalg_eig": "one shape per result: eigenvalues (*, n), eigenvectors (*, n, n) ((0,) without compute_v)",
    "lu_permutation": "pivots' batch dims and m: (*, m)",
    "linalg_pinv": "(*, n, m) for A (*, m, n), the batch dims broadcast with atol's and rtol's shapes",
}
OUT_DTYPES = {
    # Note [out= dtypes] (gen_core.py); default: the result must cast to out's dtype.
    "from_out": "without dtype=, the op computes in out's dtype (sum, cumsum, randint)",
    "float_from_out": "as from_out for a floating/complex input whose dtype casts to out's (mean)",
    "exact": "out's dtype must be the result's (matmul, argmax, where)",
    "logical": "out is bool or uint8 (all, any)",
}
# Note [Autocast] (flambeau/dispatch.h): what an op does to its floating tensor arguments
# inside an autocast region (`autocast:`); an op without one runs as called.
AUTOCAST_POLICIES = {
    "lower": "cast to the region's low-precision dtype (the GEMM and convolution family)",
    "fp32": "cast to float32 (losses, prod)",
    "promote": "cast to the widest floating dtype among them (cat, stack)",
}
# Note [Batching rules in the table]: the batching rule flambeau.func.vmap runs for an op (`batch:`), by name;
# each is a function of flambeau/func/_vmap.py's _RULE_FUNCTIONS. An op without `batch:` gets the rule of
# its shape rule (SHAPE_BATCH_RULES), if any; gen_core.py exports the result as `_C._op_batch_rules`.
BATCH_RULES = {
    "elementwise": "samples padded to one rank behind the batch dim; a non-negative dim argument moves right",
    "reduction": "a reduction over the sample's dims (all of them, or the given dims moved past the batch dim)",
    "views": "view and shape ops whose arguments name the sample's dims (moved behind the batch dim)",
    "all_batched": "every tensor argument batched (unbatched ones expanded), dims moved past the batch dim",
    "batch_in_front": "ops over trailing dims that take any leading ones: the batch dim is one more",
    "matmul": "matmul/mm/mv/dot/bmm on samples: the batch dim stays in front of the matrix dims",
    "scaled_products": "addmm/addmv/addr/baddbmm/addbmm: beta * input + alpha * product, batched as products",
    "linear": "linear with batched inputs and/or weights",
    "conv": "conv1d/2d: a batched input is more images; batched weights become groups of one conv",
    "conv_transpose": "conv_transpose1d/2d: images, or batched weights as groups of one transposed convolution",
    "images": "pooling and image ops on [C, ...] or [N, C, ...] samples: the batch joins the images",
    "layer_norm": "native_layer_norm: the batch dim is one more; batched weight and bias applied after",
    "rnn_layer": "_rnn_layer: the batch joins each step's sequences; batched weights unroll the steps on the batch",
    "group_norm": "native_group_norm: the batch joins the images; batched weight and bias applied after",
    "batch_norm": "native_batch_norm: each sample's channels become channels of one batch norm",
    "embedding": "embedding: batched indices look up the shared table; a batched table is a gather",
    "cross_entropy": "_cross_entropy: the batch joins the rows, the loss reduced per sample",
    "nll_loss": "nll_loss_nd: the batch joins N, the loss reduced per sample",
    "pointwise_loss": "a pointwise loss: computed per element (reduction 'none') and reduced per sample",
    "prelu": "prelu: where(x > 0, x, weight * x) with the weight along the sample's channel dim",
    "indexed": "gather/scatter and kin, whose index has the input's rank: every tensor batched",
    "index_along": "index_add/index_copy/index_fill: a 1-d index into one dim (a batched one is a scatter)",
    "index_select": "index_select: a shared index selects from each sample; a batched one is a gather",
    "masked_fill": "masked_fill: with a batched mask or value, where(mask, value, input)",
    "masked_scatter": "masked_scatter: each sample's source elements gathered at its mask's running count",
    "flat_indexed": "take/put: the flattened sample indexed, one gather/scatter along the batch's rows",
    "index_put": "index_put: the batch's own index in front of the samples' tensor indices",
    "kron": "kron: each sample's outer product interleaved, the batch dim in front",
    "repeat_interleave": "repeat_interleave: int or shared repeats along the sample's dim; batched ones shared",
    "meshgrid": "_meshgrid/_cartesian_prod: each sample's vectors expanded over its grid",
    "embedding_renorm": "embedding_renorm_: the rows of every sample's indices, in one table or the batch's",
    "embedding_bag": "_embedding_bag: the batch's bags as bags of one call (a batched table as one of B*V rows)",
    "dropout_backward": "native_dropout_backward: the batch joins N (the mask may be [N, C, 1, ...])",
    "histc": "histc: each sample's bins (its own range when none is given), one scatter_add on the batch",
    "block_diag": "_block_diag: each sample's blocks padded with zero blocks and concatenated",
    "combinations": "combinations: the positions' combinations made once, each sample's elements gathered",
    "pool_backward": "max_pool_backward: the batch joins the leading dim (an index counts within its plane)",
    "covariance": "cov/corrcoef of each sample's variables, as batched matrix products",
    "linspace": "linspace/logspace with tensor start and end: each sample's points",
    "isin": "isin: a shared test set as is; a batched one compared per sample",
    "where": "where(condition, input, other) is elementwise; where(condition) loops (one shape per sample)",
    "searchsorted": "searchsorted/bucketize: a shared 1-d sequence as is; else each sample's own sequence",
    "quantile": "quantile/nanquantile of each sample",
    "matrix_entries": "trace/diag/fliplr/flipud/ravel/tile/rot90/msort/t, composed of batched views",
    "matrix_batch": "linear-algebra solvers whose arguments share their batch dims: all batched",
    "atleast": "_atleast_1d/2d/3d: unit dims added as PyTorch places them",
    "stacks": "hstack/vstack (row_stack)/dstack/column_stack: cat of the samples made 1-, 2- or 3-d",
    "broadcast_tensors": "_broadcast_tensors: each sample expanded to the samples' broadcast shape",
    "trapezoid": "trapezoid/cumulative_trapezoid: elementwise over the dims it does not integrate",
    "pad_nd": "_pad_nd: a constant pad as is; other modes take [C, ...] or [N, C, ...]",
    "repeat": "repeat: the sample's repeats, the batch dim repeated once",
    "layout_free": "to/contiguous: the values, without the sample's memory format",
    "view_as_complex": "view_as_complex: the samples laid out as the op needs",
    "as_strided": "refused: the sample's strides and offset are the whole batch's inside vmap",
}
# The batching rule of an op without `batch:`, from its shape rule (Note [Batching rules in the table]).
# Note [Result layout] (src/result_layout.cpp): how a structured op lays out a new result (`layout:`).
# Without it: elementwise for an op whose shape rule is same/broadcast and whose batching rule is
# elementwise (the pointwise ops and their backwards), else contiguous.
LAYOUT_RULES = {
    "elementwise": "TensorIterator's: the layout of the tensors it names (default: every tensor argument)",
    "suggest": "channels-last when the one tensor it names has channels-last strides, else contiguous",
    "conv_format": "a convolution's: channels-last when either tensor it names (input, weight) suggests it",
    "suggest_unless_contiguous": "batch norm's: contiguous when the tensor it names is row-major, else as suggest",
    "suggest_list": "cat's: the common suggested format of the list's tensors, else contiguous",
    "preserve": "the named tensor's strides when it is dense, else dense in its strides' order (sort's)",
    "contiguous": "row-major, whatever the inputs' layout",
}

SHAPE_BATCH_RULES = {
    "same": "elementwise",
    "broadcast": "elementwise",
    "reduce": "reduction",
    "reduce_dim": "reduction",
    "scalar": "reduction",
    "index_select": "all_batched",
    "cat": "all_batched",
    "loss": "pointwise_loss",
}
_RULE = re.compile(r"^(?P<name>[a-z_0-9]+)(?:\((?P<args>[^()]*)\))?$")
_CHECK = re.compile(r"^(?P<name>[a-z_0-9]+)\((?P<args>.*)\)$")


@dataclass
class Rule:
    """A dtype or shape rule: its name and the tensor arguments it reads."""

    name: str
    args: list[str]


class TableError(ValueError):
    """A malformed entry of ops.yaml or derivatives.yaml (raised at build time)."""


@dataclass
class Arg:
    name: str
    type: str
    default: str | None = None  # as written: None, 1, -1, False, [], 0.5
    kw_only: bool = False
    mutable: bool = False  # Tensor(a!): written in place

    @property
    def cpp_type(self) -> str:
        if self.mutable:
            return "Tensor&"
        return TYPES[self.type][0]

    @property
    def stored_type(self) -> str:
        return TYPES[self.type][1]

    @property
    def stub_type(self) -> str:
        return TYPES[self.type][2]

    @property
    def is_tensor(self) -> bool:
        return self.type in TENSOR_TYPES

    @property
    def python_only(self) -> bool:
        """A factory's `requires_grad` and `pin_memory` are applied by the binding and its `layout` checked there,
        not passed to C++."""
        return (self.name in ("requires_grad", "pin_memory") and self.type == "bool") or self.type == "Layout?"

    def cpp_default(self) -> str | None:
        """The default as a C++ expression (for the inline function of ops.h)."""
        d = self.default
        if d is None:
            return None
        if d == "None":
            if self.type == "Generator?":
                return "nullptr"
            return "std::nullopt" if self.type.endswith("?") else None
        if d in ("True", "False"):
            return d.lower()
        if d == "[]":
            return "{}"
        if self.type == "Device" and d == "cpu":
            return "Device()"
        if self.type in ("ScalarType", "ScalarType?"):
            return f"ScalarType::{d}"
        if self.type in ("MemoryFormat", "MemoryFormat?"):
            return f"MemoryFormat::{MEMORY_FORMATS[d]}"
        if self.type.startswith("str"):
            return f'"{d.strip(chr(34))}"'
        if re.fullmatch(r"-?\d+", d) and self.type == "int[]":
            return f"Shape{{{d}}}"  # one int for every dim: the op repeats it
        if re.fullmatch(r"-?\d+", d) and self.type.startswith("Scalar"):
            return f"int64_t({d})"
        return d


@dataclass
class Return:
    name: str | None
    type: str
    mutable: bool = False


@dataclass
class OpDecl:
    """One row of the table."""

    func: str  # the signature as written
    name: str  # base name: `max` for `max.dim`
    overload: str | None
    args: list[Arg]
    returns: list[Return]
    kind: str = "primitive"
    python: list[str] = field(default_factory=lambda: ["function", "method"])
    python_name: str | None = None
    operators: list[str] = field(default_factory=list)
    inplace: bool = False  # also generate `name_` (composite: copy_ of the result)
    out: bool = False
    view: bool = False
    doc: str = ""
    line: int = 0
    inplace_of: str | None = None  # set on a `name_` generated from `inplace: true`
    # Note [Meta step]: the rules that generate the check step and the Meta kernel.
    dtype: list[Rule] = field(default_factory=list)  # one per returned tensor
    shape: Rule | None = None
    checks: list[tuple[str, str]] = field(default_factory=list)  # (check name, C++ argument text)
    dtypes: list[str] = field(default_factory=list)  # Note [Dtype coverage]: keys of DTYPE_SETS (empty: all)
    # Note [Structured kernels] (flambeau/dispatch.h): a backend implements one out kernel
    # `void(const Tensor& out, args...)` (one output per result, first, for a tuple of tensors);
    # the generated code runs the meta step and allocates.
    structured: bool = False
    out_dtype: str | None = None  # Note [out= dtypes]: a key of OUT_DTYPES
    errors_as: str | None = None  # the name the meta step's messages give (max_pool2d_with_indices: max_pool2d)
    autocast: str | None = None  # Note [Autocast]: a key of AUTOCAST_POLICIES
    aliases: list[str] = field(default_factory=list)  # more Python names of the same op (arcsin for asin)
    batch: str | None = None  # Note [Batching rules in the table]: a key of BATCH_RULES
    layout: Rule | None = None  # Note [Result layout]: the declared rule (layout_rule: the one that applies)
    # The kernel reads indices from a tensor's values and raises IndexError for one out of range
    # (Note [Ops launched from the meta step]: a queuing backend runs it where the error reaches the call).
    index_values: bool = False
    # It draws from the default generator without a Generator? argument (dropout): a backend runs it in
    # program order, so a seed gives the same draws (not launched from the meta step).
    random: bool = False
    # The kernel raises for what it finds in the values (LAPACK's info: a singular matrix, one that is not
    # positive-definite, no convergence; pivots out of range): a queuing backend runs it where that error
    # reaches the call, as PyTorch's CUDA linalg reads the info back (not launched from the meta step).
    value_errors: bool = False

    @property
    def batch_rule(self) -> str | None:
        """The vmap batching rule: the declared one, else its shape rule's (Note [Batching rules in the table])."""
        if self.batch is not None:
            return self.batch
        return SHAPE_BATCH_RULES.get(self.shape.name) if self.shape is not None else None

    @property
    def layout_rule(self) -> Rule:
        """Note [Result layout]: the declared rule, else elementwise for a pointwise op, else contiguous."""
        if self.layout is not None:
            return self.layout
        if self.shape is not None and self.shape.name in ("same", "broadcast") and self.batch_rule == "elementwise":
            return Rule("elementwise", [a.name for a in self.args if a.type in ("Tensor", "TensorOrNumber")])
        return Rule("contiguous", [])

    @property
    def has_meta(self) -> bool:
        return self.shape is not None

    @property
    def cpp_name(self) -> str:
        """The C++ op object's name: `op::max_dim` for `max.dim`."""
        return f"{self.name}_{self.overload}" if self.overload else self.name

    @property
    def py_name(self) -> str:
        return self.python_name or self.name

    @property
    def py_names(self) -> list[str]:
        """The Python name and its aliases: each is bound, in every Python form, to this one op."""
        return [self.py_name, *self.aliases]

    @property
    def cpp_args(self) -> list[Arg]:
        return [a for a in self.args if not a.python_only]

    @property
    def is_inplace(self) -> bool:
        return bool(self.returns) and self.returns[0].mutable

    def cpp_return(self) -> str:
        if self.is_inplace:
            return "Tensor&"
        if len(self.returns) == 1:
            return RETURN_TYPES[self.returns[0].type]
        if not self.returns:
            return "void"
        return "std::tuple<" + ", ".join(RETURN_TYPES[r.type] for r in self.returns) + ">"

    def cpp_signature(self) -> str:
        """The dispatcher signature: `Tensor(const Tensor& self, ...)`."""
        params = ", ".join(f"{a.cpp_type} {a.name}" for a in self.cpp_args)
        return f"{self.cpp_return()}({params})"

    def self_arg(self) -> Arg | None:
        return next((a for a in self.args if a.name == "self"), None)


_SIG = re.compile(r"^(?P<name>[a-z_][a-z0-9_]*)(?:\.(?P<overload>[a-z0-9_]+))?\((?P<args>.*)\)\s*->\s*(?P<ret>.+)$")


def _split_top(text: str) -> list[str]:
    """Splits on commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_arg(text: str, kw_only: bool, where: str) -> Arg:
    m = re.fullmatch(
        r"(?P<type>[A-Za-z\[\]?]+)(?P<alias>\(a!\))?\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:=(?P<default>.+))?", text
    )
    if not m:
        raise TableError(f"{where}: cannot parse argument '{text}'")
    ty = m["type"]
    if ty not in TYPES:
        raise TableError(f"{where}: unknown type '{ty}' in '{text}' (known: {', '.join(TYPES)})")
    return Arg(m["name"], ty, m["default"], kw_only, bool(m["alias"]))


def parse_signature(func: str, where: str) -> tuple[str, str | None, list[Arg], list[Return]]:
    m = _SIG.match(func.strip())
    if not m:
        raise TableError(f"{where}: cannot parse signature '{func}'")
    args: list[Arg] = []
    kw_only = False
    for part in _split_top(m["args"]):
        if part == "*":
            kw_only = True
            continue
        args.append(_parse_arg(part, kw_only, where))
    ret = m["ret"].strip()
    returns: list[Return] = []
    if ret.startswith("("):
        for part in _split_top(ret[1:-1]):
            ty, _, name = part.partition(" ")
            returns.append(Return(name.strip() or None, ty.strip()))
    elif ret != "()":
        mutable = ret.endswith("(a!)")
        ty = ret.removesuffix("(a!)")
        returns.append(Return(None, ty, mutable))
    for r in returns:
        if r.type not in RETURN_TYPES:
            raise TableError(f"{where}: unknown return type '{r.type}'")
    names = [a.name for a in args]
    if len(set(names)) != len(names):
        raise TableError(f"{where}: duplicate argument names in '{func}'")
    return m["name"], m["overload"], args, returns


KEYS = {
    "func", "kind", "python", "python_name", "operators", "inplace", "out", "view", "doc",
    "dtype", "shape", "checks", "out_dtype", "errors_as", "autocast", "aliases", "structured",
    "batch", "dtypes", "index_values", "random", "value_errors", "layout",
}  # fmt: skip


def _parse_rule(text: object, known: set[str], args: list[Arg], where: str, what: str) -> Rule:
    m = _RULE.match(str(text).strip())
    if not m or (m["name"] not in known):
        raise TableError(f"{where}: unknown {what} rule '{text}' (known: {', '.join(sorted(known))})")
    names = [a.strip() for a in (m["args"] or "").split(",") if a.strip()]
    if m["name"] in SHAPE_FUNCTIONS:
        missing = [n for n in names if n not in {a.name for a in args}]
        if not names or missing:
            raise TableError(f"{where}: shape function '{text}' must name the op's arguments it reads")
        return Rule(m["name"], names)
    tensors = {a.name for a in args if a.is_tensor}
    for n in names:
        if n not in tensors:
            raise TableError(f"{where}: {what} rule '{text}' names '{n}', which is not a tensor argument")
    if not names:
        names = [a.name for a in args if a.type in ("Tensor", "TensorOrNumber")]
    return Rule(m["name"], names)


def _parse_meta(e: dict, op: OpDecl, where: str) -> None:
    """Fills the Note [Meta step] fields of `op` from its entry."""
    if "dtype" in e:
        rules = e["dtype"] if isinstance(e["dtype"], list) else [e["dtype"]]
        known = set(DTYPE_RULES) | set(FIXED_DTYPES)
        op.dtype = [_parse_rule(r, known, op.args, where, "dtype") for r in rules]
        if len(op.dtype) != max(1, len(op.returns)):
            raise TableError(f"{where}: dtype needs one rule per returned tensor ({len(op.returns)})")
    if "shape" in e:
        op.shape = _parse_rule(e["shape"], set(SHAPE_RULES) | set(SHAPE_FUNCTIONS), op.args, where, "shape")
    if bool(op.dtype) != (op.shape is not None):
        raise TableError(f"{where}: an op with rules needs both 'dtype' and 'shape'")
    for c in e.get("checks", []):
        m = _CHECK.match(str(c).strip())
        if not m:
            raise TableError(f"{where}: a check is written name(arguments), got '{c}'")
        op.checks.append((m["name"], m["args"].strip()))
    dtypes = e.get("dtypes", [])
    op.dtypes = dtypes if isinstance(dtypes, list) else [dtypes]
    unknown = [d for d in op.dtypes if d not in DTYPE_SETS]
    if unknown:
        raise TableError(f"{where}: unknown dtypes set(s) {unknown} (known: {', '.join(DTYPE_SETS)})")
    if op.dtypes and not op.has_meta:
        raise TableError(f"{where}: 'dtypes' needs the op's 'dtype' and 'shape' rules (its check step)")
    op.structured = bool(e.get("structured", False))
    if op.structured:
        if not op.has_meta:
            raise TableError(f"{where}: a structured op needs 'dtype' and 'shape' rules (its meta step)")
        # One Tensor, or a tuple of them (one output per result: Note [Structured kernels]).
        if not op.returns or any(r.type != "Tensor" for r in op.returns):
            raise TableError(f"{where}: a structured op returns one Tensor or a tuple of Tensors")
        if len(op.returns) == 1 and op.shape.name in PER_RESULT_SHAPES:
            raise TableError(f"{where}: a structured op with one result has one shape")
        if len(op.returns) > 1 and op.out and op.shape.name in OPTIONAL_RESULT_SHAPES:
            raise TableError(f"{where}: a structured op whose results may be absent has no out=")
    if "layout" in e:
        if not op.structured:
            raise TableError(f"{where}: 'layout' is the rule of a structured op's new result")
        op.layout = _parse_rule(e["layout"], set(LAYOUT_RULES), op.args, where, "layout")
        if op.layout.name in ("suggest", "suggest_unless_contiguous", "preserve") and len(op.layout.args) != 1:
            raise TableError(f"{where}: layout {op.layout.name} names one tensor argument, {op.layout.name}(input)")
        if op.layout.name == "conv_format" and len(op.layout.args) != 2:
            raise TableError(f"{where}: layout conv_format names two tensor arguments, conv_format(input, weight)")
    op.errors_as = e.get("errors_as")
    op.out_dtype = e.get("out_dtype")
    if op.out_dtype is not None and op.out_dtype not in OUT_DTYPES:
        raise TableError(f"{where}: out_dtype must be one of {sorted(OUT_DTYPES)}")


def _parse_aliases(e: dict, where: str) -> list[str]:
    aliases = e.get("aliases", [])
    if not isinstance(aliases, list) or not all(
        isinstance(a, str) and re.fullmatch(r"[a-z_][a-z0-9_]*", a) for a in aliases
    ):
        raise TableError(f"{where}: aliases is a list of Python names")
    return aliases


def load_ops(path: Path) -> list[OpDecl]:
    """Reads ops.yaml; raises TableError naming the entry for anything malformed."""
    text = Path(path).read_text()
    entries = yaml.safe_load(text) or []
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.startswith("- func:")]
    ops: list[OpDecl] = []
    seen: set[str] = set()
    for i, e in enumerate(entries):
        where = f"{Path(path).name}:{lines[i] if i < len(lines) else '?'}"
        if not isinstance(e, dict) or "func" not in e:
            raise TableError(f"{where}: each entry needs a 'func'")
        unknown = set(e) - KEYS
        if unknown:
            raise TableError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(KEYS)})")
        name, overload, args, returns = parse_signature(e["func"], where)
        python = e.get("python", ["function", "method"])
        if isinstance(python, str):
            python = [python]
        if set(python) - PYTHON_FORMS:
            raise TableError(f"{where}: python forms must be among {sorted(PYTHON_FORMS)}")
        kind = e.get("kind", "primitive")
        if kind not in KINDS:
            raise TableError(f"{where}: kind must be one of {sorted(KINDS)}")
        op = OpDecl(
            func=e["func"],
            name=name,
            overload=overload,
            args=args,
            returns=returns,
            kind=kind,
            python=python,
            python_name=e.get("python_name"),
            operators=e.get("operators", []),
            inplace=bool(e.get("inplace", False)),
            out=bool(e.get("out", False)),
            view=bool(e.get("view", False)),
            doc=(e.get("doc") or "").strip(),
            line=lines[i] if i < len(lines) else 0,
            aliases=_parse_aliases(e, where),
        )
        _parse_meta(e, op, where)
        op.autocast = e.get("autocast")
        if op.autocast is not None and op.autocast not in AUTOCAST_POLICIES:
            raise TableError(f"{where}: autocast must be one of {sorted(AUTOCAST_POLICIES)}, got '{op.autocast}'")
        op.index_values = bool(e.get("index_values", False))
        op.random = bool(e.get("random", False))
        op.value_errors = bool(e.get("value_errors", False))
        op.batch = e.get("batch")
        if op.batch is not None and op.batch not in BATCH_RULES:
            known = ", ".join(sorted(BATCH_RULES))
            raise TableError(f"{where}: op '{op.cpp_name}': unknown batch rule '{op.batch}' (known: {known})")
        if "method" in python and not op.self_arg():
            raise TableError(f"{where}: a method needs an argument named 'self'")
        if python and any(a.type == "Tensor?[]" for a in args):
            raise TableError(f"{where}: Tensor?[] has no Python conversion: use python: [] and bind it by hand")
        if op.cpp_name in seen:
            raise TableError(f"{where}: op '{op.cpp_name}' declared twice")
        seen.add(op.cpp_name)
        ops.append(op)
    check_structured_inplace(ops)
    # `inplace: true` adds the `name_` form (copy_ of the result); an overload
    # `name.x` adds `name_.x`, another overload of the Python method `name_`.
    names: dict[str, str] = {}
    for op in ops:
        for alias in op.aliases:
            if names.setdefault(alias, op.name) != op.name or any(o.py_name == alias for o in ops):
                raise TableError(f"ops.yaml:{op.line}: alias '{alias}' names another op too")
    for op in list(ops):
        inplace = make_inplace_composite(op)
        if op.inplace and inplace.cpp_name not in seen:
            ops.append(inplace)
            seen.add(inplace.cpp_name)
    return ops


def batch_rules(ops: list[OpDecl]) -> dict[str, str]:
    """Each Python name's batching rule (Note [Batching rules in the table]), aliases included: the rule its
    overloads declare, else the first one derived from an overload's shape rule. Ops bound by hand
    (`python: []`) count too: their Python functions carry the op's name."""
    declared: dict[str, str] = {}
    derived: dict[str, str] = {}
    for op in ops:
        for name in op.py_names:
            if op.batch is not None:
                if declared.setdefault(name, op.batch) != op.batch:
                    raise TableError(
                        f"ops.yaml:{op.line}: op '{op.cpp_name}' declares batch rule '{op.batch}', another overload "
                        f"of '{name}' '{declared[name]}': the overloads of a Python name share one rule"
                    )
            elif op.batch_rule is not None:
                derived.setdefault(name, op.batch_rule)
    return derived | declared


def structured_base(op: OpDecl, ops: list[OpDecl]) -> OpDecl | None:
    """The functional op whose out kernel a structured in-place primitive runs (`add_` -> `add`)."""
    if not (op.structured and op.is_inplace):
        return None
    name = op.name.removesuffix("_") + (f"_{op.overload}" if op.overload else "")
    return next((o for o in ops if o.cpp_name == name), None)


def check_structured_inplace(ops: list[OpDecl]) -> None:
    """A structured in-place primitive `name_(self, args...)` runs `name`'s out kernel on (self, self, args...)."""
    for op in ops:
        if not (op.structured and op.is_inplace):
            continue
        base = structured_base(op, ops)
        where = f"ops.yaml:{op.line}"
        if base is None or not base.structured or base.is_inplace:
            raise TableError(f"{where}: structured in-place op '{op.cpp_name}' needs a structured functional op")
        if [(a.name, a.type) for a in op.cpp_args[1:]] != [(a.name, a.type) for a in base.cpp_args[1:]]:
            raise TableError(f"{where}: '{op.cpp_name}' must take the arguments of '{base.cpp_name}'")


def make_inplace_composite(op: OpDecl) -> OpDecl:
    """`sin_(self)` as `self.copy_(sin(self))` (gen_core.py's write_inplace checks the dtype and shape)."""
    args = [Arg(a.name, a.type, a.default, a.kw_only, a.name == "self") for a in op.args]
    return OpDecl(
        func=op.func.replace(op.name, op.name + "_", 1),
        name=op.name + "_",
        overload=op.overload,
        args=args,
        returns=[Return(None, "Tensor", True)],
        kind="composite",
        python=["method"] if "method" in op.python else [],
        doc=f"In-place form of {op.name}: writes the result into self and returns self."
        + (f"\n\n{op.doc}" if op.doc else ""),
        line=op.line,
        inplace_of=op.cpp_name,
        aliases=[a + "_" for a in op.aliases],
    )
