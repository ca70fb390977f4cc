"""flambeau.func: composable function transforms, as ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian`` turn a
function of tensors into a function computing its derivatives; ``functional_call`` runs an ``nn.Module``
with other parameters and buffers (so a model is a function of its parameters) and
``stack_module_state`` stacks the state of an ensemble; ``replace_all_batch_norm_modules_`` stops batch
norms tracking running statistics so a model can run under ``vmap``. ``functionalize`` runs a function on
copies of its inputs and writes input mutations back (eagerly: there is no graph to rewrite),
``rearrange`` is einops' axis rearrangement and ``debug_unwrap`` shows the batch under a vmapped value.
The transforms take pytrees (tuples, lists, dicts) of tensors, accept ``argnums`` and ``has_aux`` as
PyTorch's, and compose in any order (``grad(grad(f))``, ``jacrev(jacrev(f))``, ``jacfwd(grad(f))``).

``vmap`` maps a function of one sample over a batch, running each op once on the batch (Note [vmap on
__torch_function__] in ``_vmap.py``); ``vmap(grad(f))`` gives per-sample gradients.

Where it differs from ``torch.func``: the reverse-mode transforms run on autograd's one tape (Note
[Transforms on one tape] in ``_transforms.py``); ``jvp``, ``jacfwd`` and ``linearize`` run on dual tensors
(``flambeau.autograd.forward_ad``), or by the double-backward trick where an op has no forward formula
(with a warning) or inside another forward-mode transform. Every transform also runs inside ``vmap``, at
any depth of nested ``vmap`` calls (Note [transforms inside nested vmap]).

Example:
    >>> import flambeau as fb
    >>> x = fb.tensor([1.0, 2.0], dtype=fb.float64)
    >>> fb.func.grad(lambda t: (t**3).sum())(x).tolist()
    [3.0, 12.0]
    >>> fb.func.jacrev(fb.func.grad(lambda t: (t**3).sum()))(x).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

from flambeau_autograd.functional import _register_vectorized_jacobian

from flambeau.func import _transforms
from flambeau.func._batch_norm_replacement import replace_all_batch_norm_modules_
from flambeau.func._eager_transforms import debug_unwrap, functionalize
from flambeau.func._functional_call import functional_call, stack_module_state
from flambeau.func._rearrange import rearrange
from flambeau.func._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from flambeau.func._vmap import vmap

# autograd.functional's vectorize=True batches with vmap through this package (Note [vectorized jacobian]).
_register_vectorized_jacobian(_transforms._vectorized_jacobian)

__all__ = [
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "linearize",
    "jacrev",
    "jacfwd",
    "hessian",
    "vmap",
    "functional_call",
    "stack_module_state",
    "replace_all_batch_norm_modules_",
    "functionalize",
    "debug_unwrap",
    "rearrange",
]
