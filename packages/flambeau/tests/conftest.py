"""Fixtures shared by the meta-package's tests."""

import os

import pytest


@pytest.fixture(scope="module")
def ext_root(tmp_path_factory):
    """A fresh folder for the module's C++ extension builds ($FLAMBEAU_EXTENSIONS_DIR), restored after."""
    root = tmp_path_factory.mktemp("flambeau_extensions")
    old = os.environ.get("FLAMBEAU_EXTENSIONS_DIR")
    os.environ["FLAMBEAU_EXTENSIONS_DIR"] = str(root)
    yield root
    if old is None:
        del os.environ["FLAMBEAU_EXTENSIONS_DIR"]
    else:
        os.environ["FLAMBEAU_EXTENSIONS_DIR"] = old
