"""flambeau.onnx: export is not built yet and says what to do meanwhile."""

import flambeau as fb
import pytest


def test_export_says_not_built_and_the_way_through_pytorch(tmp_path):
    model = fb.nn.Linear(2, 1)
    with pytest.raises(NotImplementedError) as info:
        fb.onnx.export(model, (fb.zeros(1, 2),), str(tmp_path / "m.onnx"), opset_version=17)
    message = str(info.value)
    assert message.startswith("[onnx.export] ONNX export is not built into flambeau yet")
    assert "flambeau.save(model.state_dict()" in message and "torch.onnx.export" in message
    assert not (tmp_path / "m.onnx").exists()
    assert fb.onnx.is_in_onnx_export() is False
