"""flambeau.linalg and flambeau.fft are core's modules, importable by name, and
the torch.* linear algebra spellings (det, inverse, einsum, ...) are at the top level."""

import flambeau as fb
import flambeau_core


def test_linalg_and_fft_are_core_modules():
    assert fb.linalg is flambeau_core.linalg
    assert fb.fft is flambeau_core.fft
    import flambeau.fft as ff
    import flambeau.linalg as fl

    assert fl.det is flambeau_core.linalg.det
    assert fl.lu_factor is flambeau_core.linalg.lu_factor and fl.ldl_solve is flambeau_core.linalg.ldl_solve
    assert ff.fftfreq is flambeau_core.fft.fftfreq


def test_top_level_spellings():
    for name in [
        "det",
        "inverse",
        "outer",
        "ger",
        "einsum",
        "tensordot",
        "cross",
        "slogdet",
        "logdet",
        "matrix_power",
        "cholesky",
        "qr",
        "svd",
        "pinverse",
        "dot",
        "inner",
        "mv",
        "chain_matmul",
        "lu",
        "lu_solve",
        "lu_unpack",
        "geqrf",
        "ormqr",
    ]:
        assert getattr(fb, name) is getattr(flambeau_core, name)
    x = fb.tensor([[2.0, 0.0], [0.0, 3.0]])
    assert fb.det(x).item() == 6.0
    inv = x.inverse().tolist()
    assert inv[0] == [0.5, 0.0] and abs(inv[1][1] - 1.0 / 3.0) < 1e-7
