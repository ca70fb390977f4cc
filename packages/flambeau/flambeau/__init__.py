"""flambeau: one PyTorch-shaped namespace over the flambeau packages.

This meta-package holds no logic. Importing it imports every subsystem,
activates the defaults (the caching allocator for CPU memory, autograd,
interop protocols) and exposes them under PyTorch's names.

Example:
    >>> import flambeau as fb
    >>> x = fb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad.tolist()
    [[2.0, 4.0], [6.0, 8.0]]
"""

from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types

import flambeau_alloc as _alloc
import flambeau_autograd as _autograd
import flambeau_core as _core
import flambeau_data as _data
import flambeau_distributed as _distributed
import flambeau_interop as _interop
import flambeau_nn as _nn
import flambeau_sim as _sim
from flambeau_core import *  # noqa: F401,F403  (tensors, dtypes, ops, devices, threads)
from flambeau_core import FlambeauError, Tensor, device, dtype  # noqa: F401

# Not `from flambeau import memory`: the star import above already bound
# `memory` to flambeau_core.memory, which flambeau.memory extends.
memory = _importlib.import_module("flambeau.memory")


def _alias(name: str, module: _types.ModuleType) -> _types.ModuleType:
    """Makes `import flambeau.<name>` (and its loaded submodules) resolve to `module` itself."""
    full = f"{__name__}.{name}"
    _sys.modules[full] = module
    prefix = module.__name__ + "."
    for sub_name, sub in list(_sys.modules.items()):
        if sub_name.startswith(prefix) and sub is not None:
            _sys.modules[full + "." + sub_name[len(prefix) :]] = sub
    return module


# Defaults: caching allocator on. (autograd and interop register themselves on import.)
_alloc.enable()

autograd = _alias("autograd", _autograd)
array_api = _alias("array_api", _core.array_api)  # what Tensor.__array_namespace__() returns
nn = _alias("nn", _nn)
optim = _alias("optim", _nn.optim)
# The nn.functional ops PyTorch also exposes at the top level with the same arguments (torch.conv3d,
# torch.layer_norm, ...). Those whose top-level form differs (dropout's `train`, the losses' integer
# `reduction`, batch_norm's argument order) come in torch's spelling from flambeau_nn._torch_forms.
for _name in (
    "conv3d conv_transpose3d layer_norm group_norm rms_norm avg_pool1d max_pool1d max_pool2d max_pool3d "
    "cosine_similarity "
    "pairwise_distance pdist bilinear celu selu rrelu threshold hardshrink channel_shuffle "
    "celu_ selu_ rrelu_ threshold_ conv_tbc"
).split():
    globals()[_name] = getattr(_nn.functional, _name)
globals().update(_nn._torch_forms.TOP_LEVEL)  # torch.dropout(input, p, train), torch.kl_div(input, target), ...
# torch.lstm_cell, norm_except_dim, orgqr, the build queries and the removed solve/eig/lstsq/symeig.
_torch_names = _importlib.import_module("flambeau._torch_names")
globals().update({_name: getattr(_torch_names, _name) for _name in _torch_names.__all__})
_torch_names.install_tensor_methods()
_streams = _importlib.import_module("flambeau._streams")
Stream, Event = _streams.Stream, _streams.Event  # torch.Stream, torch.Event: any device's
multiprocessing = _alias("multiprocessing", _data.multiprocessing)
distributed = _alias("distributed", _distributed)
linalg = _alias("linalg", _core.linalg)
fft = _alias("fft", _core.fft)
special = _alias("special", _core.special)
signal = _alias("signal", _core.signal)  # torch.signal.windows
masked = _alias("masked", _core.masked)  # torch.masked's functions (no MaskedTensor)
backends = _alias("backends", _core.backends)
accelerator = _alias("accelerator", _core.accelerator)
amp = _alias("amp", _core.amp)  # torch.amp: autocast, GradScaler
cpu = _alias("cpu", _core.cpu)  # torch.cpu (torch.cpu.amp)
random = _alias("random", _core.random)
# torch.profiler, and torch.autograd.profiler (the older API) under autograd's alias.
_autograd.profiler = _importlib.import_module("flambeau_core.profiler.autograd_profiler")
profiler = _alias("profiler", _importlib.import_module("flambeau_core.profiler"))
_sys.modules[f"{__name__}.autograd.profiler"] = _autograd.profiler
onnx = _importlib.import_module("flambeau.onnx")
hub = _importlib.import_module("flambeau.hub")
# torch.library and torch.ops: operators written in Python, reached as fb.ops.<namespace>.<name>.
library = _importlib.import_module("flambeau.library")
ops = library.ops
distributions = _importlib.import_module("flambeau.distributions")  # torch.distributions
func = _importlib.import_module("flambeau.func")  # torch.func: grad, jacrev, vmap, functional_call, ...
vmap = func.vmap  # torch.vmap
compiler = _importlib.import_module("flambeau.compiler")  # torch.compiler
compile = compiler.compile  # noqa: A001 (torch.compile)
# torch.sparse: COO tensors; torch.mm/matmul also take a sparse first operand.
sparse = _alias("sparse", _importlib.import_module("flambeau_core.sparse"))
sparse_coo_tensor, spmm, sparse_coo, strided = sparse.sparse_coo_tensor, sparse.spmm, sparse.sparse_coo, sparse.strided
layout = sparse.layout  # torch.layout: the type of strided and sparse_coo
mm = sparse.with_sparse_first_operand(_core.mm)
matmul = sparse.with_sparse_first_operand(_core.matmul)
# torch.nn.parallel.DistributedDataParallel's place (flambeau-nn itself knows nothing of MPI).
_nn.parallel = _distributed.parallel
_sys.modules[f"{__name__}.nn.parallel"] = _distributed.parallel

utils = _types.ModuleType(
    f"{__name__}.utils", "flambeau.utils: data loading (.data), checkpointing (.checkpoint), TensorBoard (.tensorboard)"
)
utils.data = _alias("utils.data", _data)
utils.checkpoint = _alias("utils.checkpoint", _nn.utils.checkpoint)
utils.tensorboard = _alias("utils.tensorboard", _importlib.import_module("flambeau._tensorboard"))
utils.cpp_extension = _alias("utils.cpp_extension", _importlib.import_module("flambeau._cpp_extension"))
_sys.modules[f"{__name__}.utils"] = utils

no_grad = _autograd.no_grad
enable_grad = _autograd.enable_grad
set_grad_enabled = _autograd.set_grad_enabled
inference_mode = _autograd.inference_mode
is_inference_mode_enabled = _autograd.is_inference_mode_enabled
is_anomaly_enabled = _autograd.is_anomaly_enabled
set_anomaly_enabled = _autograd.set_anomaly_enabled
is_anomaly_check_nan_enabled = _autograd.is_anomaly_check_nan_enabled
detach, detach_ = _autograd.detach, _autograd.detach_

from_numpy = _interop.from_numpy
from_dlpack = _interop.from_dlpack
to_dlpack = _interop.to_dlpack

# PyTorch's checkpoint format (flambeau-interop); .safetensors files go through flambeau-nn's reader/writer.
serialization = _alias("serialization", _importlib.import_module("flambeau_interop.serialization"))
serialization.register_safetensors(_nn.save, _nn.load)
save = serialization.save
load = serialization.load

__version__ = _core.__version__

# Devices (Note [Device backends]): fb.cuda answers "not available" without
# flambeau-cuda; the simulated device registers on request and is then fb.sim.
cuda = _core.cuda
# flambeau-cuda (optional: `pip install "flambeau[cuda]"`) registers the CUDA backend on import.
try:
    import flambeau_cuda as _cuda  # noqa: F401
except ModuleNotFoundError as _e:
    if _e.name != "flambeau_cuda":
        raise
device_module = _core.device_module
utils.register_sim = _sim.register


def __getattr__(name: str) -> object:
    if name == "sim":
        if _sim.is_registered():
            return _core.device_module("sim")
        raise AttributeError(
            "flambeau.sim: the simulated device is not registered; call flambeau.utils.register_sim() first"
        )
    raise AttributeError(f"module 'flambeau' has no attribute '{name}'")
