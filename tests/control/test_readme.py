"""The README's Control API example prints what the README shows."""

from __future__ import annotations

import contextlib
import io

import pytest

pytest.importorskip("gymnasium")

from tests.conftest import ROOT  # noqa: E402


def test_readme_control_example(monkeypatch):
    block = (ROOT / "README.md").read_text(encoding="utf-8").split("## Control API", 1)[1]
    code = block.split("```python", 1)[1].split("```", 1)[0]
    expected = block.split("```text", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)  # the example names scenarios/… relative to the repository
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), {})
    assert buf.getvalue().strip() == expected.strip()
