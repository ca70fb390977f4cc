"""``flambeau-run script.py args...``: run an unchanged PyTorch program on flambeau.

The script runs as ``python script.py args...`` would run it (``sys.argv``,
``__name__ == "__main__"``, ``__file__``, ``sys.path[0]``, exit codes,
``multiprocessing`` children) with ``import torch`` and its submodules resolved
to flambeau (:mod:`flambeau.torch_import_hook`, whose table says which module
maps where). At exit it prints to stderr, once, the PyTorch features the
program reached that flambeau lacks; when the script fails, that list comes
first and the script's own error is then re-raised, so it fails as it would.

Also ``python -m flambeau.run script.py args...``; ``flambeau-run --modules``
prints the module table.

Example (a shell)::

    $ flambeau-run train.py --epochs 3
"""

from __future__ import annotations

import builtins
import os
import sys
import types
from importlib.machinery import SourceFileLoader

from flambeau import torch_import_hook

USAGE = "usage: flambeau-run script.py [args ...]   |   flambeau-run --modules"


def _main_module(path: str) -> types.ModuleType:
    """A fresh ``__main__`` for the script, as the interpreter makes one for ``python script.py``."""
    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__loader__ = SourceFileLoader("__main__", path)
    module.__spec__ = None
    module.__cached__ = None
    module.__builtins__ = builtins
    return module


def run(path: str, args: list[str]) -> None:
    """Runs the script at ``path`` with ``args`` as its ``sys.argv[1:]``, torch resolved to flambeau."""
    with open(path, "rb") as f:
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    sys.argv[:] = [path, *args]
    # The script's folder first on the path, as `python script.py` puts it (links resolved), in place
    # of what `-m flambeau.run` (the working directory) or the console script (its bin folder) put there.
    script_dir = os.path.dirname(os.path.realpath(path))
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.append(script_dir)
    torch_import_hook.install()
    module = _main_module(path)
    # Kept as __main__ to the end (atexit handlers, threads, spawn children pickling __main__.f).
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    except SystemExit:
        torch_import_hook.report()
        raise
    except BaseException as e:
        torch_import_hook.report(e)
        raise


def main(argv: list[str] | None = None) -> int:
    """The ``flambeau-run`` command; returns the exit code when the script does not raise."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] == "--modules":
        print(torch_import_hook.module_table_markdown(), end="")
        return 0
    path = argv[0]
    if not os.path.isfile(path):
        print(f"flambeau-run: can't open file {path!r}: no such file", file=sys.stderr)
        return 2
    run(path, argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
