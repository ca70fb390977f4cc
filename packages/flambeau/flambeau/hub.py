"""``flambeau.hub``: models from a ``hubconf.py`` and weights from URLs (``torch.hub``).

``load(dir, model, source="local")`` imports ``dir/hubconf.py``, checks its
``dependencies``, and calls its entry point ``model(*args, **kwargs)``; ``list``
and ``help`` read the same file. A GitHub repository (``"owner/repo[:ref]"``) is
downloaded once into :func:`get_dir` (``$FLAMBEAU_HOME/hub``, by default
``~/.cache/flambeau/hub``) and loaded from there afterwards, as PyTorch caches
it; ``load_state_dict_from_url`` keeps files in ``get_dir()/checkpoints``. Where
no network is reachable, a download raises ``urllib.error.URLError`` naming the
URL (or repository) and where to put the file by hand.

Example:
    >>> import os, tempfile
    >>> import flambeau as fb
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "hubconf.py"), "w") as f:
    ...     _ = f.write("import flambeau as fb\\ndef tiny(n=2):\\n    return fb.nn.Linear(n, 1)\\n")
    >>> fb.hub.load(d, "tiny", source="local", n=3).weight.shape
    flambeau.Size([1, 3])
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from typing import Any
from urllib.parse import urlparse

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

_hub_dir: str | None = None
_TIMEOUT_S = 30


def get_dir() -> str:
    """The hub cache folder: the one :func:`set_dir` set, else ``$FLAMBEAU_HOME/hub``
    (``$FLAMBEAU_HOME`` defaults to ``$XDG_CACHE_HOME/flambeau``, that to ``~/.cache``).

    Example:
        >>> import os, tempfile
        >>> import flambeau as fb
        >>> previous = fb.hub.get_dir()
        >>> d = tempfile.mkdtemp()
        >>> fb.hub.set_dir(d)
        >>> fb.hub.get_dir() == d
        True
        >>> fb.hub.set_dir(previous)
    """
    if _hub_dir is not None:
        return _hub_dir
    cache = os.getenv("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.join(os.path.expanduser(os.getenv("FLAMBEAU_HOME", os.path.join(cache, "flambeau"))), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Makes ``d`` the hub cache folder.

    Example:
        >>> import os, tempfile
        >>> import flambeau as fb
        >>> previous = fb.hub.get_dir()
        >>> fb.hub.set_dir(os.path.join(tempfile.mkdtemp(), "hub"))
        >>> os.path.basename(fb.hub.get_dir())
        'hub'
        >>> fb.hub.set_dir(previous)
    """
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _unreachable(what: str, url: str, error: BaseException, remedy: str) -> urllib.error.URLError:
    reason = getattr(error, "reason", error)
    return urllib.error.URLError(
        f"[hub] could not download {what} from {url}: no network is reachable ({reason}); {remedy}"
    )


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Downloads ``url`` to the file ``dst`` (written to a temporary file first, then moved).

    ``hash_prefix``: the file's SHA-256 must start with it (RuntimeError otherwise).
    ``progress`` is accepted for PyTorch's signature (no progress bar is printed).

    Example:
        >>> import hashlib, os, pathlib, tempfile
        >>> import flambeau as fb
        >>> d = tempfile.mkdtemp()
        >>> src = os.path.join(d, "weights.bin")
        >>> _ = pathlib.Path(src).write_bytes(b"0123456789")
        >>> digest = hashlib.sha256(b"0123456789").hexdigest()
        >>> dst = os.path.join(d, "copy", "weights.bin")
        >>> fb.hub.download_url_to_file(pathlib.Path(src).as_uri(), dst, hash_prefix=digest[:8])
        >>> pathlib.Path(dst).read_bytes()
        b'0123456789'
    """
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    tmp = tempfile.NamedTemporaryFile(delete=False, dir=folder, suffix=".partial")
    try:
        sha = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:  # noqa: S310 (the caller's URL)
                while chunk := response.read(1 << 20):
                    tmp.write(chunk)
                    sha.update(chunk)
        except urllib.error.HTTPError:
            raise
        except (urllib.error.URLError, OSError) as e:
            raise _unreachable("the file", url, e, f"download it elsewhere and copy it to {dst}") from e
        tmp.close()
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'[hub] invalid hash value of {url} (expected "{hash_prefix}", got "{sha.hexdigest()}")')
        shutil.move(tmp.name, dst)
    finally:
        tmp.close()
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location: Any = None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> dict[str, Any]:
    """Loads the checkpoint at ``url`` with ``flambeau.load``, downloading it once into
    ``model_dir`` (default ``get_dir()/checkpoints``); a file already there is not downloaded again.

    ``check_hash``: the file name's part after the last ``-`` (``resnet-5c106cde.pth``) must
    start the file's SHA-256.

    Example:
        >>> import os, pathlib, tempfile
        >>> import flambeau as fb
        >>> d = tempfile.mkdtemp()
        >>> src = os.path.join(d, "tiny.pth")
        >>> fb.save({"w": fb.tensor([1.0, 2.0])}, src)
        >>> sd = fb.hub.load_state_dict_from_url(pathlib.Path(src).as_uri(), model_dir=os.path.join(d, "cache"))
        >>> sd["w"], os.listdir(os.path.join(d, "cache"))
        (tensor([1., 2.]), ['tiny.pth'])
    """
    import flambeau  # noqa: PLC0415  (flambeau.hub is imported by flambeau itself)

    model_dir = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        match = re.search(r"-([a-f0-9]*)\.", filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return flambeau.load(cached, map_location=map_location, weights_only=weights_only)


def _import_hubconf(folder: str) -> Any:
    path = os.path.join(folder, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"[hub] no hubconf.py in {folder}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, folder)  # hubconf imports its repository's own modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"[hub] missing dependencies of {path}: {', '.join(missing)}")
    return module


def _entry(module: Any, model: str) -> Any:
    if not isinstance(model, str):
        raise ValueError(
            f"[hub] invalid input: model should be a str naming an entry point, got {type(model).__name__}"
        )
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"[hub] cannot find callable {model} in hubconf ({module.__file__})")
    return fn


def _repo_folder(github: str, force_reload: bool) -> str:
    """The cached folder of ``owner/repo[:ref]``, downloaded first if missing (or ``force_reload``)."""
    m = re.fullmatch(r"([\w.-]+)/([\w.-]+)(?::([\w./-]+))?", github)
    if m is None:
        raise ValueError(f"[hub] invalid repository {github!r}; expected 'owner/repo' or 'owner/repo:ref'")
    owner, repo, ref = m.groups()
    hub = get_dir()
    refs = [ref] if ref else ["main", "master"]
    for r in refs:
        folder = os.path.join(hub, f"{owner}_{repo}_{r.replace('/', '_')}")
        if os.path.isdir(folder) and not force_reload:
            return folder
    os.makedirs(hub, exist_ok=True)
    last: Exception | None = None
    for r in refs:
        url = f"https://github.com/{owner}/{repo}/zipball/{r}"
        folder = os.path.join(hub, f"{owner}_{repo}_{r.replace('/', '_')}")
        archive = folder + ".zip"
        try:
            download_url_to_file(url, archive)
        except urllib.error.HTTPError as e:  # no such ref: try the next default branch name
            last = e
            continue
        except urllib.error.URLError as e:
            raise _unreachable(
                f"the repository {github}", url, e, f"clone it and pass its folder with source='local' (cache: {hub})"
            ) from e
        with zipfile.ZipFile(archive) as z:
            top = z.namelist()[0].split("/")[0]
            z.extractall(hub)
        os.remove(archive)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(os.path.join(hub, top), folder)
        return folder
    raise RuntimeError(f"[hub] repository {github} has none of the refs {refs}: {last}")


def _folder(repo_or_dir: str, source: str, force_reload: bool) -> str:
    if source not in ("github", "local"):
        raise ValueError(f'[hub] unknown source: "{source}"; allowed values: "github" | "local"')
    return repo_or_dir if source == "local" else _repo_folder(repo_or_dir, force_reload)


def list(  # noqa: A001  (torch.hub.list)
    github: str,
    force_reload: bool = False,
    skip_validation: bool = False,
    trust_repo: Any = None,
    verbose: bool = True,
    source: str = "github",
) -> builtins.list[str]:
    """The entry points (public callables) of a repository's (or, with ``source="local"``, a folder's) hubconf.

    Example:
        >>> import os, tempfile
        >>> import flambeau as fb
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "hubconf.py"), "w") as f:
        ...     _ = f.write("import flambeau as fb\\n")
        ...     _ = f.write("def tiny(n=2):\\n    'A Linear(n, 1).'\\n    return fb.nn.Linear(n, 1)\\n")
        >>> fb.hub.list(d, source="local")
        ['tiny']
    """
    module = _import_hubconf(_folder(github, source, force_reload))
    return [n for n in dir(module) if callable(getattr(module, n)) and not n.startswith("_")]


def help(  # noqa: A001  (torch.hub.help)
    github: str,
    model: str,
    force_reload: bool = False,
    skip_validation: bool = False,
    trust_repo: Any = None,
    source: str = "github",
) -> str | None:
    """The docstring of entry point ``model``.

    Example:
        >>> import os, tempfile
        >>> import flambeau as fb
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "hubconf.py"), "w") as f:
        ...     _ = f.write("import flambeau as fb\\n")
        ...     _ = f.write("def tiny(n=2):\\n    'A Linear(n, 1).'\\n    return fb.nn.Linear(n, 1)\\n")
        >>> fb.hub.help(d, "tiny", source="local")
        'A Linear(n, 1).'
    """
    return _entry(_import_hubconf(_folder(github, source, force_reload)), model).__doc__


def load(
    repo_or_dir: str,
    model: str,
    *args: Any,
    source: str = "github",
    trust_repo: Any = None,
    force_reload: bool = False,
    verbose: bool = True,
    skip_validation: bool = False,
    **kwargs: Any,
) -> Any:
    """``model(*args, **kwargs)`` from the hubconf of ``repo_or_dir``: a GitHub ``"owner/repo[:ref]"``
    (``source="github"``, cached in :func:`get_dir`) or a folder (``source="local"``).

    Example:
        >>> import os, tempfile
        >>> import flambeau as fb
        >>> d = tempfile.mkdtemp()
        >>> with open(os.path.join(d, "hubconf.py"), "w") as f:
        ...     _ = f.write("import flambeau as fb\\n")
        ...     _ = f.write("def tiny(n=2):\\n    'A Linear(n, 1).'\\n    return fb.nn.Linear(n, 1)\\n")
        >>> fb.hub.load(d, "tiny", source="local", n=3)
        Linear(in_features=3, out_features=1, bias=True)
    """
    folder = _folder(repo_or_dir, source, force_reload)
    return _entry(_import_hubconf(folder), model)(*args, **kwargs)
