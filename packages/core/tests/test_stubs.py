"""The generated type stubs (flambeau_core/_C.pyi, from codegen/ops.yaml) against the module."""

import ast
import importlib.resources

import flambeau_core as fc
import pytest


@pytest.fixture(scope="module")
def stub():
    text = importlib.resources.files("flambeau_core").joinpath("_C.pyi").read_text()
    return ast.parse(text)  # a syntax error fails here


def _functions(nodes):
    return {n.name: n for n in nodes if isinstance(n, ast.FunctionDef)}


def test_every_public_function_and_method_has_a_stub(stub):
    functions = _functions(stub.body)
    tensor = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    methods = _functions(tensor.body)
    for name in dir(fc._C):
        obj = getattr(fc._C, name)
        if not name.startswith("_") and callable(obj) and not isinstance(obj, type):
            assert name in functions, f"flambeau_core.{name} has no stub"
    for name in ("add", "sin", "clamp", "index_put_", "contiguous", "clone", "__and__", "__floordiv__"):
        assert name in methods, f"Tensor.{name} has no stub"
    names = {t.value for t in next(n for n in stub.body if isinstance(n, ast.AnnAssign)).value.elts}
    assert {"memory_format", "channels_last", "FlambeauError", "Tensor"} <= names


def test_op_stubs_name_their_parameters_and_types_tensors(stub):
    functions = _functions(stub.body)
    for name in ("add", "sin", "clamp", "where", "softmax", "all", "div", "randint", "clone"):
        fn = functions[name] if name in functions else None
        assert fn is not None, name
        for arg in fn.args.args + fn.args.kwonlyargs:
            assert arg.annotation is not None, (name, arg.arg)
            text = ast.unparse(arg.annotation)
            if arg.arg in ("input", "self", "other", "out"):
                assert "Any" not in text, (name, arg.arg, text)
        assert ast.get_docstring(fn) or name in ("randint",), f"{name} has no docstring"
