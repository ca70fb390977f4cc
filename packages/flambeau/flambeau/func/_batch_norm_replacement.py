"""``replace_all_batch_norm_modules_``: batch norms that stop tracking running statistics (``torch.func``'s).

Under ``vmap`` a batch norm's in-place update of its running statistics would write one sample's (or one
ensemble member's) statistics into a buffer shared by all; PyTorch's answer is to drop the buffers, so the
layer always normalizes with the statistics of the batch it is given.
"""

from __future__ import annotations

from flambeau_nn.modules.batchnorm import _BatchNorm
from flambeau_nn.modules.module import Module

__all__ = ["replace_all_batch_norm_modules_"]


def replace_all_batch_norm_modules_(root: Module) -> Module:
    r"""replace_all_batch_norm_modules_(root) -> Module

    In place, makes every batch norm module in ``root`` (``root`` itself included; ``BatchNorm1d``,
    ``BatchNorm2d``, ``BatchNorm3d``, ``SyncBatchNorm``, their lazy forms and subclasses) stop tracking
    running statistics: ``running_mean``, ``running_var`` and ``num_batches_tracked`` become ``None`` and
    ``track_running_stats`` becomes ``False``, as ``torch.func.replace_all_batch_norm_modules_`` does.
    Such a layer then normalizes with the statistics of its input in training and in eval mode, and its
    forward mutates nothing, so the model can run under ``vmap``. Instance norms are left as they are.

    Args:
        root (Module): the module to update.

    Returns:
        Module: ``root``.

    Example:
        >>> import flambeau as fb
        >>> model = fb.nn.Sequential(fb.nn.Linear(3, 4), fb.nn.BatchNorm1d(4))
        >>> _ = fb.func.replace_all_batch_norm_modules_(model)
        >>> model[1].track_running_stats, model[1].running_mean
        (False, None)
        >>> sorted(model.state_dict())
        ['0.bias', '0.weight', '1.bias', '1.weight']
    """
    if not isinstance(root, Module):
        raise TypeError(f"[func.replace_all_batch_norm_modules_] root must be an nn.Module, got {type(root).__name__}")
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
