"""SummaryWriter and FileWriter: PyTorch's ``torch.utils.tensorboard`` writers."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from flambeau_core import FlambeauError

from . import _graph, _projector, _proto, _summary
from ._events import EventFileWriter

__all__ = ["FileWriter", "SummaryWriter"]


def _serialized(message: Any) -> bytes:
    """A message's wire bytes: as given, or a protobuf object's (tensorboard's event_pb2/summary_pb2)."""
    return message.SerializeToString() if hasattr(message, "SerializeToString") else message


class FileWriter:
    """Writes Event messages to a new event file in ``log_dir`` (the layer beneath SummaryWriter).

    Example:
        >>> import tempfile
        >>> from flambeau.utils.tensorboard import FileWriter
        >>> w = FileWriter(tempfile.mkdtemp())
        >>> w.get_logdir() != ""
        True
        >>> w.close()
    """

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The directory the event file is in.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import FileWriter
            >>> w = FileWriter(tempfile.mkdtemp())
            >>> w.get_logdir() == w.event_writer.log_dir
            True
            >>> w.close()
        """
        return self.event_writer.log_dir

    def add_event(self, event: bytes, step: int | None = None, walltime: float | None = None) -> None:
        """Adds one event: an Event message (its bytes, or a tensorboard protobuf); sets its wall_time and step.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import FileWriter
            >>> w = FileWriter(tempfile.mkdtemp())
            >>> from flambeau._tensorboard import _proto
            >>> w.add_event(_proto.bytes_field(3, "brain.Event:2"), step=0)
            >>> w.close()
        """
        event = _serialized(event)
        head = _proto.event(time.time() if walltime is None else walltime, None if step is None else int(step))
        # Protobuf parsers merge repeated occurrences: fields appended after the head complete the message.
        self.event_writer.add_event(head + event)

    def add_summary(self, summary: bytes, global_step: int | None = None, walltime: float | None = None) -> None:
        """Wraps a Summary message (its bytes, or a tensorboard protobuf) in an Event and adds it.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import FileWriter
            >>> w = FileWriter(tempfile.mkdtemp())
            >>> from flambeau._tensorboard import _proto
            >>> w.add_summary(_proto.summary(_proto.summary_value("x", simple_value=1.0)), global_step=3)
            >>> w.close()
        """
        self.add_event(_proto.bytes_field(5, _serialized(summary)), global_step, walltime)

    def flush(self) -> None:
        """Writes the pending events to disk.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import FileWriter
            >>> w = FileWriter(tempfile.mkdtemp())
            >>> w.flush()
            >>> w.close()
        """
        self.event_writer.flush()

    def close(self) -> None:
        """Flushes and closes the event file.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import FileWriter
            >>> w = FileWriter(tempfile.mkdtemp())
            >>> w.close()
        """
        self.event_writer.close()


def _check_tag(tag: Any, where: str, name: str = "tag") -> str:
    if not isinstance(tag, str):
        raise TypeError(f"[{where}] expected {name} to be a str, got {type(tag).__name__}")
    return tag


def _step(global_step: Any, where: str) -> int | None:
    if global_step is None:
        return None
    try:
        return int(_summary.scalar_of(global_step, where))
    except TypeError as e:
        raise TypeError(f"[{where}] expected global_step to be an int, got {type(global_step).__name__}") from e


class SummaryWriter:
    r"""Writes scalars, histograms, images, text, hyperparameters and the model's structure for TensorBoard.

    As ``torch.utils.tensorboard.SummaryWriter``: each writer creates a new event
    file in ``log_dir`` (TensorBoard's format: TFRecord-framed ``Event``
    messages); ``tensorboard --logdir runs`` shows them. Values may be flambeau
    tensors, NumPy arrays, Python numbers or torch tensors. Events are queued
    and written when ``max_queue`` are pending, every ``flush_secs`` seconds, on
    :meth:`flush` and on :meth:`close` (also when the writer is collected or the
    program exits). The ``tensorboard`` package is needed only to view the
    files, not to write them (``pip install tensorboard``).

    Args:
        log_dir: where to write. Default ``runs/<date>_<hostname><comment>``
            (e.g. ``runs/Nov28_19-30-00_myhostLR_0.1``).
        comment: appended to the default ``log_dir``; ignored when ``log_dir`` is given.
        purge_step: when resuming a crashed run at step ``T``, events of the earlier
            run at steps ``>= T`` are hidden by TensorBoard.
        max_queue: pending events that force a write to disk.
        flush_secs: how often pending events are written, in seconds.
        filename_suffix: appended to the event file's name.

    Raises:
        OSError: (the subclass the system raised: PermissionError, NotADirectoryError ...)
            when ``log_dir`` cannot be created or written, naming it.

    Example:
        >>> import tempfile
        >>> import flambeau as fb
        >>> from flambeau.utils.tensorboard import SummaryWriter
        >>> with SummaryWriter(tempfile.mkdtemp()) as writer:
        ...     for step in range(3):
        ...         writer.add_scalar("loss", fb.tensor(1.0 / (step + 1)), step)
        ...     writer.add_histogram("weights", fb.randn(100), 0)
    """

    def __init__(
        self,
        log_dir: str | os.PathLike | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
    ) -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._projector_entries: list[str] = []  # projector_config.pbtxt is rewritten whole on each add_embedding
        self._get_file_writer()
        self.default_bins = _summary.default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The writer of ``log_dir``'s event file; after :meth:`close`, a new file."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = int(self.purge_step)
                self.file_writer.add_event(_proto.bytes_field(3, "brain.Event:2"), step)
                self.file_writer.add_event(
                    _proto.bytes_field(7, _proto.varint_field(1, _proto.SESSION_LOG_START)), step
                )
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """The directory event files are written to.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> w = SummaryWriter(tempfile.mkdtemp())
            >>> w.add_scalar("a", 1.0, 0)
            >>> w.get_logdir() == w.log_dir
            True
            >>> w.close()
        """
        return self.log_dir

    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Logs one number under ``tag`` at ``global_step``.

        ``scalar_value`` is a Python number, or a tensor or array with one element.
        ``new_style=True`` stores it as a tensor (float32, or float64 with
        ``double_precision``) with the scalars plugin's metadata instead of a
        ``simple_value``.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     for i in range(10):
            ...         w.add_scalar("y=2x", i * 2, i)
        """
        where = "SummaryWriter.add_scalar"
        _check_tag(tag, where)
        summary = _summary.scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, _step(global_step, where), walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Logs several numbers as curves of one chart: each key goes to its own run, ``<log_dir>/<main_tag>_<key>``.

        Example:
            >>> import math, tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     for i in range(5):
            ...         w.add_scalars("run", {"sin": math.sin(i), "cos": math.cos(i)}, i)
        """
        where = "SummaryWriter.add_scalars"
        _check_tag(main_tag, where, "main_tag")
        if not isinstance(tag_scalar_dict, Mapping):
            raise TypeError(f"[{where}] expected tag_scalar_dict to be a dict, got {type(tag_scalar_dict).__name__}")
        walltime = time.time() if walltime is None else walltime
        step = _step(global_step, where)
        summaries = {tag: _summary.scalar(main_tag, value) for tag, value in tag_scalar_dict.items()}
        fw_logdir = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, summary in summaries.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + str(tag)
            writer = self.all_writers.get(fw_tag)
            if writer is None:
                writer = self.all_writers[fw_tag] = FileWriter(
                    fw_tag, self.max_queue, self.flush_secs, self.filename_suffix
                )
            writer.add_summary(summary, step, walltime)

    def add_histogram(
        self,
        tag: str,
        values: Any,
        global_step: int | None = None,
        bins: Any = "tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """Logs the distribution of ``values`` (any shape).

        ``bins="tensorflow"`` uses TensorFlow's exponential buckets
        (:attr:`default_bins`); any other value is NumPy's ``np.histogram`` ``bins``
        (a count, edges, or a rule such as ``"auto"``). ``max_bins`` merges
        adjacent bins down to at most that many.

        Example:
            >>> import tempfile
            >>> import flambeau as fb
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_histogram("normal", fb.randn(1000), 0, bins="auto")
        """
        where = "SummaryWriter.add_histogram"
        _check_tag(tag, where)
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = _summary.histogram(tag, values, bins, max_bins)
        self._get_file_writer().add_summary(summary, _step(global_step, where), walltime)

    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Logs an image, stored as PNG.

        ``img_tensor`` is laid out as ``dataformats`` says: ``"CHW"`` (default),
        ``"HWC"``, ``"HW"`` (grayscale), or a batch ``"NCHW"``/``"NHWC"`` shown as a
        grid. 1 channel is gray, 3 RGB, 4 RGBA. uint8 values are 0..255; any other
        dtype is 0..1 and is scaled by 255 (values outside are clipped).

        Example:
            >>> import tempfile
            >>> import flambeau as fb
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_image("noise", fb.rand(3, 32, 48), 0)
            ...     w.add_image("gray", fb.rand(32, 48), 0, dataformats="HW")
        """
        where = "SummaryWriter.add_image"
        _check_tag(tag, where)
        summary = _summary.image(tag, img_tensor, dataformats, where)
        self._get_file_writer().add_summary(summary, _step(global_step, where), walltime)

    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Logs a batch of images as one grid image (8 to a row); ``dataformats`` ``"NCHW"`` (default) or ``"NHWC"``.

        Example:
            >>> import tempfile
            >>> import flambeau as fb
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_images("batch", fb.rand(16, 3, 8, 8), 0)
        """
        where = "SummaryWriter.add_images"
        _check_tag(tag, where)
        summary = _summary.image(tag, img_tensor, dataformats, where)
        self._get_file_writer().add_summary(summary, _step(global_step, where), walltime)

    def add_figure(
        self,
        tag: str,
        figure: Any,
        global_step: int | None = None,
        close: bool = True,
        walltime: float | None = None,
    ) -> None:
        """Logs a matplotlib figure (or a list of them, as a grid) rendered to an image; needs matplotlib.

        ``close`` closes the figure once drawn.

        Example:
            >>> import tempfile
            >>> import matplotlib
            >>> matplotlib.use("Agg")
            >>> import matplotlib.pyplot as plt
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> fig = plt.figure()
            >>> _ = plt.plot([1, 2, 3], [1, 4, 9])
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_figure("parabola", fig, 0)
        """
        where = "SummaryWriter.add_figure"
        _check_tag(tag, where)
        if isinstance(figure, list):
            images = [_summary.figure_to_chw(f, close, where) for f in figure]
            if len({i.shape for i in images}) > 1:
                raise FlambeauError(
                    f"[{where}] the figures of a list must render to one size, got {[i.shape for i in images]}"
                )
            self.add_image(tag, np.stack(images), global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, _summary.figure_to_chw(figure, close, where), global_step, walltime, dataformats="CHW")

    def add_text(
        self, tag: str, text_string: str, global_step: int | None = None, walltime: float | None = None
    ) -> None:
        """Logs text (Markdown, shown by TensorBoard's text tab) under ``<tag>/text_summary``.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_text("notes", "**lr** = 0.1", 0)
        """
        where = "SummaryWriter.add_text"
        _check_tag(tag, where)
        self._get_file_writer().add_summary(_summary.text(tag, text_string), _step(global_step, where), walltime)

    def add_pr_curve(
        self,
        tag: str,
        labels: Any,
        predictions: Any,
        global_step: int | None = None,
        num_thresholds: int = 127,
        weights: Any = None,
        walltime: float | None = None,
    ) -> None:
        """Logs a precision-recall curve: ``labels`` (true/false per point), ``predictions`` (probabilities in [0, 1]).

        ``num_thresholds`` (at most 127, as in PyTorch) evenly spaced thresholds;
        ``weights`` weighs each point.

        Example:
            >>> import tempfile
            >>> import flambeau as fb
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_pr_curve("pr", fb.randint(0, 2, (100,)), fb.rand(100), 0)
        """
        where = "SummaryWriter.add_pr_curve"
        _check_tag(tag, where)
        summary = _summary.pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._get_file_writer().add_summary(summary, _step(global_step, where), walltime)

    def add_embedding(
        self,
        mat: Any,
        metadata: Sequence[Any] | None = None,
        label_img: Any = None,
        global_step: int | None = None,
        tag: str = "default",
        metadata_header: Sequence[Any] | None = None,
    ) -> None:
        """Logs points (the rows of ``mat``, N × D) for TensorBoard's PROJECTOR tab.

        ``metadata``: a label per point (or, with ``metadata_header``, a row of
        columns per point); ``label_img``: an N×C×H×W image per point (C = 1 or 3),
        drawn into a sprite. Files go to ``<log_dir>/<step:05d>/<tag>/`` and
        ``<log_dir>/projector_config.pbtxt`` lists every embedding of this writer.

        Example:
            >>> import tempfile
            >>> import flambeau as fb
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_embedding(fb.randn(10, 4), metadata=list("abcdefghij"), label_img=fb.rand(10, 1, 8, 8))
        """
        where = "SummaryWriter.add_embedding"
        _check_tag(tag, where)
        array = _summary.to_numpy(mat, where)
        step = str(0 if global_step is None else _step(global_step, where)).zfill(5)
        subdir = f"{step}/{_projector.encode_tag(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        if os.path.exists(save_path) and not os.path.isdir(save_path):
            raise NotADirectoryError(f"[{where}] {save_path} exists and is a file, not a directory")
        sprite_dim = _projector.write_embedding(save_path, array, metadata, label_img, metadata_header)
        entry = _projector.embedding_info(tag, step, subdir, metadata is not None, sprite_dim)
        self._projector_entries.append(entry)
        with open(os.path.join(log_dir, "projector_config.pbtxt"), "w", encoding="utf-8") as f:
            f.write("".join(self._projector_entries))

    def add_hparams(
        self,
        hparam_dict: Mapping[str, Any],
        metric_dict: Mapping[str, Any],
        hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
    ) -> None:
        """Logs a run's hyperparameters and final metrics for TensorBoard's HPARAMS tab.

        Written to a sub-run ``<log_dir>/<run_name>`` (default: the current time):
        the hparams plugin's experiment, session-start and session-end summaries,
        then each metric as a scalar. Values may be bool, int, float, str, a
        one-element tensor, or None (skipped). Unlike PyTorch, which stores a bool
        as the number 0 or 1, a bool is stored as a bool.
        ``hparam_domain_discrete`` lists, per hyperparameter, the values it can take.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_hparams({"lr": 0.1, "optimizer": "sgd"}, {"hparam/accuracy": 0.9})
        """
        where = "SummaryWriter.add_hparams"
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError(
                f"[{where}] expected hparam_dict and metric_dict to be dicts, got "
                f"{type(hparam_dict).__name__} and {type(metric_dict).__name__}"
            )
        experiment, start, end = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        scalars = {k: _summary.scalar(k, v) for k, v in metric_dict.items()}
        step = _step(global_step, where)
        run_name = run_name or str(time.time())
        with SummaryWriter(log_dir=os.path.join(self._get_file_writer().get_logdir(), run_name)) as hp_writer:
            fw = hp_writer._get_file_writer()
            for summary in (experiment, start, end, *scalars.values()):
                fw.add_summary(summary, step)

    def add_graph(
        self, model: Any, input_to_model: Any = None, verbose: bool = False, use_strict_trace: bool = True
    ) -> None:
        """Logs the model's **module structure** for TensorBoard's GRAPHS tab.

        Not PyTorch's traced op graph (that comes with flambeau's profiler and
        tracer): one name scope per module (``Net/Sequential[features]/Conv2d[0]``)
        holding a node per parameter and buffer, with its shape, and a node for
        each leaf module's forward call. With ``input_to_model`` (a tensor or a
        tuple of them) the model runs once in eval mode under ``no_grad`` (each
        module's mode restored after): the calls get their output shapes and
        the edges of the data flow between modules (a tensor made by a
        functional op between two modules counts as the output of the module
        that ran last). ``verbose`` prints the nodes;
        ``use_strict_trace`` is accepted for PyTorch's signature.

        Example:
            >>> import tempfile
            >>> import flambeau as fb
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> model = fb.nn.Sequential(fb.nn.Linear(4, 8), fb.nn.ReLU(), fb.nn.Linear(8, 2))
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_graph(model, fb.randn(1, 4))
        """
        graph, lines = _graph.module_graph(model, input_to_model)
        if verbose:
            print("\n".join(lines))
        self._get_file_writer().add_event(_proto.bytes_field(4, graph))

    def flush(self) -> None:
        """Writes every pending event to disk.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> w = SummaryWriter(tempfile.mkdtemp())
            >>> w.add_scalar("a", 1.0, 0)
            >>> w.flush()
            >>> w.close()
        """
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flushes and closes the event files; a later ``add_*`` starts a new file.

        Example:
            >>> import tempfile
            >>> from flambeau.utils.tensorboard import SummaryWriter
            >>> w = SummaryWriter(tempfile.mkdtemp())
            >>> w.add_scalar("a", 1.0, 0)
            >>> w.close()
        """
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
