"""The Python examples run as scripts: examples/python/fd_trajectory.py compiles the UR5e, simulates
it with fd, checks the trajectory with id, and plots it when matplotlib is installed;
examples/python/contacts_horizon.py evaluates a horizon of the Mini Cheetah's contact dynamics and
derivatives in one batch call."""

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


CONTACTS = REPO / "examples" / "python" / "contacts_horizon.py"


@pytest.fixture(scope="module")
def contacts_run(cache, tmp_path_factory):
    """The horizon example, built at -O0 (CXXFLAGS) into the session cache: the same entry as
    test_contacts.py's `example` solver, so that it is built once."""
    cwd = tmp_path_factory.mktemp("contacts_example")
    env = {**os.environ, "NELU_CACHE_DIR": str(cache), "PYTHONPATH": str(Path(nelu.__file__).parents[1]), "CXXFLAGS": "-O0"}
    proc = subprocess.run([sys.executable, str(CONTACTS), str(cwd / "forces.png")], cwd=cwd, env=env, capture_output=True, text=True)
    return proc, cwd


def test_contacts_example_runs(contacts_run):
    proc, _ = contacts_run
    assert proc.returncode == 0, proc.stderr
    assert "out: qdd root_joint.wx," in proc.stdout and "fr.fx, fr.fy, fr.fz, fl.fx" in proc.stdout
    assert "the robot weighs 87.426720 N" in proc.stdout
    assert "one batch call: out (50, 30), jac (50, 30, 54)" in proc.stdout
    assert "batch outputs and Jacobians against 50 single calls: max relative error" in proc.stdout


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is not installed (python3-matplotlib): no plot to check")
def test_contacts_example_plots(contacts_run):
    proc, cwd = contacts_run
    assert proc.returncode == 0, proc.stderr
    assert (cwd / "forces.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
