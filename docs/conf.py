"""Sphinx configuration of flambeau's documentation site (`nox -s docs` builds it into docs/_build/html).

The pages are the markdown under docs/ as they are (MyST), the README and each package's README (copied
in at build time with their links pointed at the site's pages), and an API reference generated from
docs/public_api.py's list of public names: one page per module, each object documented from its
docstring (autodoc; the C++-bound functions' docstrings are ops.yaml's `doc:` text through `_C`).
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))

import public_api  # noqa: E402

project = "flambeau"
author = "the flambeau developers"
release = re.search(r'VERSION = "(.+?)"', (ROOT / "VERSION").read_text()).group(1)
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the docstrings are Google-style ("Args:", "Example:")
]
# .markdown: the README copies made below; test_docs.py runs docs/**/*.md's examples, the copies' originals
# are run where they live.
source_suffix = {".rst": "restructuredtext", ".md": "markdown", ".markdown": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_heading_anchors = 3  # pages link to each other's sections (alloc.md#swap-it)
myst_enable_extensions = ["colon_fence"]

html_theme = "alabaster"  # Sphinx's own theme: no further dependency
html_title = f"flambeau {release}"
html_theme_options = {"description": "A PyTorch-shaped deep-learning framework", "fixed_sidebar": True}
html_sidebars = {"**": ["about.html", "searchbox.html", "navigation.html"]}
html_static_path = ["_static"]
html_favicon = "_static/favicon.svg"  # without one, every page's /favicon.ico request is a 404 in the console

autodoc_member_order = "bysource"
autodoc_docstring_signature = True  # a C++ function's first docstring line is its signature
autodoc_typehints = "signature"
autosummary_generate = False  # the API pages are written below, one per module
napoleon_google_docstring = True
napoleon_numpy_docstring = False
suppress_warnings = ["myst.header"]  # existing pages skip heading levels (# then ###); they stay as written

# ---- pages from outside docs/: the README and each package's README -------------------------------------

PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "README.md").is_file())
_COPIES = {ROOT / "README.md": DOCS / "readme.markdown"}
_COPIES.update({ROOT / "packages" / p / "README.md": DOCS / "packages" / f"{p}.markdown" for p in PACKAGES})


def _site_page(target: Path) -> Path | None:
    """The site's source page for a repository path a page links to, or None when the site has none."""
    if target.is_dir() and (target / "README.md").is_file():
        target = target / "README.md"
    if target in _COPIES:
        return _COPIES[target]
    if target.suffix == ".md" and target.is_relative_to(DOCS) and target.is_file():
        return target
    return None


_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")


def rewrite_links(text: str, real: Path, page: Path) -> str:
    """Points a page's relative links at the site: a link to a docs page or a README goes to its page, a link
    to any other repository file (a source file, a script) becomes the file's path as code, since the site
    does not carry the repository."""

    def one(match: re.Match[str]) -> str:
        label, target = match.groups()
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, _, anchor = target.partition("#")
        resolved = (real.parent / path).resolve()
        site = _site_page(resolved)
        if site is None:
            shown = os.path.relpath(resolved, ROOT)
            return label if label.strip("`") == shown else f"{label} (`{shown}`)"
        rel = os.path.relpath(site, page.parent)
        return f"[{label}]({rel}{'#' + anchor if anchor else ''})"

    return _LINK.sub(one, text)


def _copy_readmes() -> None:
    (DOCS / "packages").mkdir(exist_ok=True)
    for real, page in _COPIES.items():
        page.write_text(rewrite_links(real.read_text(), real, page))
    index = ["# Packages", "", "Each package's README, as in the repository.", "", "```{toctree}", ":maxdepth: 1", ""]
    (DOCS / "packages" / "index.md").write_text("\n".join(index + PACKAGES + ["```", ""]))


def _write_more_pages() -> None:
    """docs/more.markdown: a table of contents of the pages under docs/ that index.md does not list, so a page
    added later is in the site (and its links checked) before anyone edits the index."""
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"^([\w./-]+)$", index, re.M))
    pages = sorted(
        p.relative_to(DOCS).with_suffix("").as_posix()
        for p in DOCS.rglob("*.md")
        if p.relative_to(DOCS).parts[0] not in ("_build", "api", "packages") and p.name != "index.md"
    )
    more = [p for p in pages if p not in listed]
    text = ["# More pages", ""]
    if more:
        text += ["```{toctree}", ":maxdepth: 1", "", *more, "```", ""]
    else:
        text += ["Every page is in the index's tables of contents.", ""]
    (DOCS / "more.markdown").write_text("\n".join(text))


def _source_read(app: object, docname: str, source: list[str]) -> None:
    page = DOCS / docname
    if page.with_suffix(".md").is_file() and docname != "packages/index":
        page = page.with_suffix(".md")
        source[0] = rewrite_links(source[0], page, page)


# ---- the API reference ------------------------------------------------------------------------------------


# The user-docs page that says how each module's behaviour differs from PyTorch's.
_DIFFERENCES_PAGE = {
    "flambeau": "core",
    "flambeau.nn": "nn",
    "flambeau.nn.functional": "nn",
    "flambeau.nn.init": "nn",
    "flambeau.nn.utils": "nn",
    "flambeau.optim": "nn",
    "flambeau.optim.lr_scheduler": "nn",
    "flambeau.autograd": "autograd",
    "flambeau.linalg": "core",
    "flambeau.fft": "core",
    "flambeau.sparse": "running-pytorch-programs",
    "flambeau.random": "core",
    "flambeau.utils": "flambeau",
    "flambeau.utils.data": "data",
    "flambeau.utils.checkpoint": "nn",
    "flambeau.utils.tensorboard": "flambeau",
    "flambeau.multiprocessing": "multiprocessing",
    "flambeau.distributed": "distributed",
    "flambeau.serialization": "interop",
    "flambeau.memory": "alloc",
    "flambeau.cuda": "design/devices",
    "flambeau.backends": "core",
    "flambeau.accelerator": "design/devices",
    "flambeau.onnx": "flambeau",
    "flambeau.hub": "flambeau",
    "flambeau.array_api": "design/array-api",
}


def _torch_counterpart(module: str) -> tuple[str, str] | None:
    """The torch module `flambeau-run` maps to this one, and the table's note on it
    (flambeau.torch_import_hook.TORCH_MODULES, which docs/running-pytorch-programs.md shows)."""
    from flambeau.torch_import_hook import TORCH_MODULES

    mine = public_api.resolve(module)
    for torch_name, (target, notes) in TORCH_MODULES.items():
        if target.endswith(".*"):
            continue
        name, _, attr = target.partition(":")
        try:
            obj = importlib.import_module(name)
            obj = getattr(obj, attr) if attr else obj
        except (ImportError, AttributeError):
            continue
        if obj is mine:
            return torch_name, notes
    return None


def _api_page(module: str, entries: list[public_api.Entry]) -> str:
    mod = public_api.resolve(module)
    lines = [module, "=" * len(module), "", f".. currentmodule:: {module}", ""]
    summary = (getattr(mod, "__doc__", None) or "").strip().split("\n\n")[0]
    if summary and type(mod).__name__ != "DeviceModule":
        lines += [summary, ""]
    torch = _torch_counterpart(module)
    if torch:
        note = f" ({_literal(torch[1])})" if torch[1] else ""
        lines += [f"PyTorch's ``{torch[0]}``{note}: the same names, signatures and defaults."]
    else:
        lines += ["flambeau's own: PyTorch has no such module."]
    differences = _DIFFERENCES_PAGE.get(module)
    if differences:
        lines[-1] += (
            f" Where behaviour differs from PyTorch: :doc:`../{differences}`, :doc:`../running-pytorch-programs`."
        )
    lines += [""]
    own = [e for e in entries if e.kind in ("function", "class")]
    if own:
        lines += [".. autosummary::", "   :nosignatures:", ""]
        lines += [f"   {e.name[len(module) + 1 :]}" for e in own]
        lines += [""]
    documented = {e.name for e in entries}
    aliases = [n for n in public_api.public_names(module) if f"{module}.{n}" not in documented]
    methods: dict[str, list[str]] = {}
    for e in entries:
        if e.kind == "method":
            cls, meth = e.name[len(module) + 1 :].rsplit(".", 1)
            methods.setdefault(cls, []).append(meth)
    for e in own:
        short = e.name[len(module) + 1 :]
        if e.kind == "class":
            lines += [f".. autoclass:: {short}"]
            if methods.get(short):
                lines += [f"   :members: {', '.join(methods[short])}"]
            lines += [""]
        else:
            lines += [f".. autofunction:: {short}", ""]
    values = [n for n in aliases if not callable(getattr(mod, n))]
    same = [n for n in aliases if callable(getattr(mod, n))]
    if aliases:
        lines += ["Also here", "---------", ""]
    if values:  # dtypes, layouts, memory formats, settings: values, not functions or classes
        lines += ["Values (dtypes, constants): " + ", ".join(f"``{n}``" for n in values) + ".", ""]
    if same:
        lines += ["The same objects as names documented on an earlier page: " + ", ".join(f"``{n}``" for n in same), ""]
    return "\n".join(lines)


def _write_api() -> None:
    api = DOCS / "api"
    shutil.rmtree(api, ignore_errors=True)
    api.mkdir()
    by_module: dict[str, list[public_api.Entry]] = {m: [] for m in public_api.modules()}
    for entry in public_api.entries():
        by_module[entry.module].append(entry)
    for module, entries in by_module.items():
        (api / f"{module}.rst").write_text(_api_page(module, entries))
    n = len(public_api.entries())
    index = [
        "API reference",
        "=============",
        "",
        f"Every public name of ``import flambeau as fb`` ({n} functions, classes and methods), from its",
        "docstring. Names and signatures are PyTorch's; where behaviour differs the docstring says so, and",
        ":doc:`../running-pytorch-programs` lists the differences by module.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ]
    (api / "index.rst").write_text("\n".join(index + [f"   {m}" for m in public_api.modules()] + [""]))


# The docstrings are plain text with reST's inline markup: ``|x|`` (an absolute value) would be a substitution,
# ``fill_`` (an in-place method) a hyperlink reference, ``(N, C, *)`` an unclosed emphasis; each renders as an
# error with a dangling link. Outside code and doctest lines those characters are taken literally (no
# docstring means emphasis by a single ``*``).
_CODE = re.compile(r"(``.*?``|`[^`]*`)")


def _literal(text: str) -> str:
    text = re.sub(r"(?<!\\)\|", r"\\|", text)
    text = re.sub(r"(?<=\w)_(?=[\s.,;:)\]'\"]|$)", r"\\_", text)
    return re.sub(r"(?<![\\*])\*(?!\*)", r"\\*", text)


def _process_docstring(app: object, what: str, name: str, obj: object, options: object, lines: list[str]) -> None:
    in_doctest = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(">>>"):
            in_doctest = True
        elif not stripped:
            in_doctest = False
        if in_doctest or stripped.startswith(":") or line.startswith("   "):
            continue  # doctest lines and their output, field lists, literal and indented blocks stay as written
        parts = _CODE.split(line)
        lines[i] = "".join(p if k % 2 else _literal(p) for k, p in enumerate(parts))


def setup(app: object) -> None:
    _copy_readmes()
    _write_more_pages()
    _write_api()
    app.connect("source-read", _source_read)
    app.connect("autodoc-process-docstring", _process_docstring)
