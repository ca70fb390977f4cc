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


@pytest.fixture
def other_abi_cflags(tmp_path):
    """Compiler flags that build an extension as if against another core (ABI tag
    'flambeau-0.0.0/gcc-1/other'): the tag is redefined before <flambeau/extension.h> is read."""
    header = tmp_path / "other_abi.h"
    header.write_text(
        '#include "flambeau/abi.h"\n#undef FLAMBEAU_ABI_TAG\n#define FLAMBEAU_ABI_TAG "flambeau-0.0.0/gcc-1/other"\n'
    )
    return ["-include", str(header)]
