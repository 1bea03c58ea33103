"""Shared fixtures of the nelu package's tests: the repository, a session cache, random states, and
the generated C functions called directly through ctypes (independently of the package's calls)."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np
import pytest

import nelu

REPO = Path(__file__).resolve().parents[2]
ROBOTS = REPO / "robots"
FIXTURES = REPO / "tests" / "fixtures"
#: The tests build generated code at -O0 (fastest to build); values are compared with the C
#: functions of the same library, so the optimization level does not matter to them.
TEST_FLAGS = "-O0"


def pytest_report_header(config):
    try:
        exe = nelu.find_nelu()
    except nelu.ToolNotFoundError as exc:
        exe = f"not found ({exc})"
    return [f"nelu package: {Path(nelu.__file__).parent}", f"nelu executable: {exe}"]


@pytest.fixture(scope="session")
def cache(tmp_path_factory) -> Path:
    """One cache for the session: a solver compiled by one test is loaded by the next."""
    return tmp_path_factory.mktemp("nelu-cache")


@pytest.fixture(scope="session")
def build(cache):
    """nelu.compile of a shipped robot (or a path), into the session cache, built at -O0."""

    def build(urdf, **options) -> nelu.Solver:
        options.setdefault("cxxflags", TEST_FLAGS)
        return nelu.compile(ROBOTS / urdf, cache_dir=cache, **options)

    return build


def random_states(solver: nelu.Solver, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n random states (q, qd, known), float64, one per row: angles in [-pi, pi], a floating base's
    unit quaternion (q slots of root_joint: x y z qx qy qz qw), velocities and inputs of order 1."""
    q = rng.uniform(-np.pi, np.pi, (n, solver.nq))
    base = [k for k, j in enumerate(solver.q_names) if j == "root_joint"]
    if base:
        quat = rng.normal(size=(n, 4))
        q[:, base[3:7]] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qd = rng.normal(size=(n, solver.nv))
    known = rng.normal(size=(n, solver.nin))
    return q, qd, known


def direct(solver: nelu.Solver, symbol: str, q, qd, known, sizes: list[int], ctype=ctypes.c_double):
    """Call `symbol` of the solver's library through ctypes arrays built from Python floats (not
    through NumPy): (status, [outputs as float64 arrays of the given sizes, NaN where untouched])."""
    lib = ctypes.CDLL(str(solver.library), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    f = getattr(lib, symbol)
    pointer = ctypes.POINTER(ctype)
    f.argtypes = [pointer] * (3 + len(sizes))
    f.restype = ctypes.c_int

    def c_array(values):
        values = [float(v) for v in values]
        return (ctype * max(1, len(values)))(*values)

    outs = [c_array([float("nan")] * size) for size in sizes]
    status = f(c_array(q), c_array(qd), c_array(known), *outs)
    dtype = np.float64 if ctype is ctypes.c_double else np.float32
    return status, [np.array(list(o)[:size], dtype=dtype) for o, size in zip(outs, sizes)]


def bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape, dtype and bits (NaN payloads included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
