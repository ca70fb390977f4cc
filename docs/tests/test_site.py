"""The built documentation site, checked in a real browser (headless Chromium) and by a link checker.

Run by `nox -s docs` after it builds docs/_build/html. The index and an API reference page load with no
console errors, the search page finds Conv2d and DataLoader, every internal link and anchor resolves, and
a screenshot of the index is kept as docs/_build/screenshots/index.png.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdp import Browser, find_chromium  # noqa: E402

BUILD = Path(__file__).resolve().parent.parent / "_build"
HTML = BUILD / "html"
SCREENSHOT = BUILD / "screenshots" / "index.png"


@pytest.fixture(scope="module")
def site() -> Path:
    assert (HTML / "index.html").is_file(), f"no site in {HTML}: build it with `nox -s docs`"
    return HTML


@pytest.fixture(scope="module")
def server(site):
    """The site over HTTP, as a reader gets it (Chromium refuses the search's fetches between file:// pages)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    chromium = find_chromium()
    assert chromium, "no chromium on PATH: `apt-get install chromium` (nox -s docs installs it as root)"
    b = Browser(chromium)
    yield b
    b.close()


def _load(browser: Browser, url: str) -> None:
    browser.console_errors.clear()
    browser.open(url)
    browser.wait_until("document.readyState === 'complete'")


def _settled_errors(browser: Browser) -> list[str]:
    """The page's console errors so far, after a moment for late ones (a failed request after the load event)."""
    time.sleep(0.5)
    browser.evaluate("0")  # reads the events that arrived meanwhile
    return list(browser.console_errors)


def test_index_loads_without_console_errors(server, browser):
    _load(browser, f"{server}/index.html")
    assert browser.evaluate("document.title").startswith("flambeau")
    # the table of contents reaches the tutorials, the packages and the API reference
    hrefs = browser.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))")
    for page in ["tutorials/cnn.html", "nn.html", "api/index.html"]:
        assert page in hrefs
    browser.screenshot(SCREENSHOT)
    assert SCREENSHOT.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert SCREENSHOT.stat().st_size > 10_000  # a rendered page, not a blank one
    errors = _settled_errors(browser)
    assert not errors, errors


def test_api_reference_page_loads_and_documents_conv2d(server, browser):
    _load(browser, f"{server}/api/flambeau.nn.html")
    errors = _settled_errors(browser)
    assert not errors, errors
    signature = browser.evaluate("document.getElementById('flambeau.nn.Conv2d')?.textContent || ''")
    assert "Conv2d" in signature and "in_channels" in signature
    # a C++-bound function's docstring (ops.yaml's doc: text through _C) renders with its example
    _load(browser, f"{server}/api/flambeau.html")
    add = browser.evaluate(
        "(() => { const d = document.getElementById('flambeau.add'); return d ? d.parentElement.textContent : ''; })()"
    )
    assert "alpha" in add and "broadcasting" in add and ">>>" in add
    errors = _settled_errors(browser)
    assert not errors, errors


@pytest.mark.parametrize(
    "query, page", [("Conv2d", "api/flambeau.nn.html"), ("DataLoader", "api/flambeau.utils.data.html")]
)
def test_search_finds(server, browser, query, page):
    _load(browser, f"{server}/search.html?q={query}")  # the query makes Sphinx's search run on load
    finished = browser.wait_until(
        "(s => s.includes('Search finished') ? s : '')"
        "(document.querySelector('#search-results .search-summary')?.textContent || '')"
    )
    assert "Search finished" in finished, finished
    found = browser.wait_until(
        "(() => { const r = document.querySelectorAll('#search-results ul.search li a');"
        " return r.length ? Array.from(r).map(a => a.getAttribute('href')) : null; })()"
    )
    assert found, f"the search for {query} found nothing"
    assert any(href.split("#")[0] == page and query in href for href in found), found
    errors = _settled_errors(browser)  # the search fetched each result page for its summary
    assert not errors, errors


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (name == "src" and tag in ("img", "script")):
                self.links.append(value)


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(errors="replace"))
    return parser


def test_every_internal_link_resolves(site):
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    assert len(pages) > 40
    broken = []
    checked = 0
    for page, parsed in pages.items():
        for link in parsed.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            checked += 1
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(site)}: {link} (no such anchor)")
    assert checked > 1000
    assert not broken, f"{len(broken)} broken links:\n  " + "\n  ".join(broken[:100])


def test_api_pages_name_pytorch_and_link_the_differences(site):
    pages = sorted((site / "api").glob("flambeau*.html"))
    assert len(pages) >= 20
    for page in pages:
        text = page.read_text()
        assert "running-pytorch-programs.html" in text, f"{page.name} does not link the differences from PyTorch"
    assert "PyTorch’s <code" in (site / "api" / "flambeau.nn.html").read_text().replace("'", "’")
