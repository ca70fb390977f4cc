"""nn.utils.rnn's inverses (unpad_sequence, unpack_sequence, invert_permutation) against PyTorch."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from nn_testing import close, fb, th

rnn = nn.utils.rnn
trnn = torch.nn.utils.rnn


def _seqs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((n, 3)) for n in (2, 5, 1, 4)]


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence(batch_first):
    seqs = _seqs()
    padded = rnn.pad_sequence([fb(s) for s in seqs], batch_first=batch_first)
    tpadded = trnn.pad_sequence([th(s) for s in seqs], batch_first=batch_first)
    lengths = [len(s) for s in seqs]
    ours = rnn.unpad_sequence(padded, fc.tensor(lengths), batch_first=batch_first)
    theirs = trnn.unpad_sequence(tpadded, torch.tensor(lengths), batch_first=batch_first)
    assert len(ours) == len(theirs) == 4
    for a, b in zip(ours, theirs, strict=True):
        close(a, b, 0, 0)
    with pytest.raises(FlambeauError, match="got 3 lengths for a batch of 4"):
        rnn.unpad_sequence(padded, fc.tensor(lengths[:3]), batch_first=batch_first)


@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_unpack_sequence(enforce_sorted):
    seqs = _seqs()
    if enforce_sorted:
        seqs = sorted(seqs, key=len, reverse=True)
    ours = rnn.unpack_sequence(rnn.pack_sequence([fb(s) for s in seqs], enforce_sorted=enforce_sorted))
    theirs = trnn.unpack_sequence(trnn.pack_sequence([th(s) for s in seqs], enforce_sorted=enforce_sorted))
    for a, b in zip(ours, theirs, strict=True):
        close(a, b, 0, 0)


def test_invert_permutation():
    perm = [3, 0, 2, 1, 4]
    assert rnn.invert_permutation(fc.tensor(perm)).tolist() == trnn.invert_permutation(torch.tensor(perm)).tolist()
    assert rnn.invert_permutation(None) is None
