"""requires_grad=True in a process where flambeau_autograd is not imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_requires_grad_without_autograd_names_the_package():
    code = textwrap.dedent(
        """
        import sys
        import flambeau_core as fc
        assert "flambeau_autograd" not in sys.modules
        x = fc.tensor([1.0, 2.0])
        for attempt in (lambda: x.requires_grad_(), lambda: fc.tensor([1.0], requires_grad=True)):
            try:
                attempt()
            except RuntimeError as e:
                print("RuntimeError:", e)
            else:
                print("no error")
        print("requires_grad:", x.requires_grad)
        print("sum:", (x * 2).sum().item())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len([ln for ln in lines if ln.startswith("RuntimeError:") and "flambeau-autograd" in ln]) == 2, out.stdout
    assert "requires_grad: False" in lines and "sum: 6.0" in lines
