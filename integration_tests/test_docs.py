"""The Python examples in the docs and the README run as written.

Every fenced block that starts with ```python is executed in a fresh
interpreter (in a temporary directory, so files it writes go there). A block
that is a fragment on purpose is marked ```python skip.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)


def _blocks():
    for page in PAGES:
        if not page.exists():
            continue
        text = page.read_text()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield pytest.param(match.group(1), id=f"{page.relative_to(ROOT)}:{line}")


@pytest.mark.parametrize("code", list(_blocks()))
def test_example_runs(code, tmp_path):
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"example failed:\n{code}\n--- stderr ---\n{proc.stderr[-3000:]}"
