"""``flambeau.utils.tensorboard``: TensorBoard logging, as ``torch.utils.tensorboard``.

:class:`SummaryWriter` writes event files in TensorBoard's format itself
(TFRecord framing, the Event/Summary protocol buffers encoded here), so
logging needs no extra package; ``pip install tensorboard`` (or
``pip install "flambeau[tensorboard]"``) installs the viewer:
``tensorboard --logdir runs``. :meth:`SummaryWriter.add_figure` needs matplotlib.

Example:
    >>> import tempfile
    >>> import flambeau as fb
    >>> from flambeau.utils.tensorboard import SummaryWriter
    >>> with SummaryWriter(tempfile.mkdtemp()) as writer:
    ...     writer.add_scalar("loss", 0.5, 1)
"""

from __future__ import annotations

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
