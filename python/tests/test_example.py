"""examples/python/fd_trajectory.py runs as a script: it compiles the UR5e, simulates it with fd,
checks the trajectory with id, and plots it when matplotlib is installed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nelu
from conftest import REPO

EXAMPLE = REPO / "examples" / "python" / "fd_trajectory.py"


@pytest.fixture(scope="module")
def run(cache, tmp_path_factory):
    cwd = tmp_path_factory.mktemp("example")
    env = {**os.environ, "NELU_CACHE_DIR": str(cache), "PYTHONPATH": str(Path(nelu.__file__).parents[1])}
    proc = subprocess.run([sys.executable, str(EXAMPLE), str(cwd / "plot.png")], cwd=cwd, env=env, capture_output=True, text=True)
    return proc, cwd


def test_example_runs(run):
    proc, _ = run
    assert proc.returncode == 0, proc.stderr
    assert "in:  tau shoulder_pan_joint, tau shoulder_lift_joint" in proc.stdout
    assert "id(q, qd, fd(q, qd, tau)) against tau over 1500 states: max relative error" in proc.stdout


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed (python3-matplotlib): no plot to check")
def test_example_plots(run):
    proc, cwd = run
    assert proc.returncode == 0, proc.stderr
    assert (cwd / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
