"""Every error path raises the documented exception (docs/python.md, "Errors"): the CLI's errors
by exit code with its message, array arguments, a missing compiler or nelu, a failing build."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

import nelu
from conftest import FIXTURES, REPO, ROBOTS, bitwise_equal, random_states


@pytest.fixture(scope="module")
def fd(build):
    return build("ur5e.urdf", problem="fd")


@pytest.fixture(scope="module")
def state(fd):
    q, qd, known = random_states(fd, np.random.default_rng(13), 1)
    return q[0], qd[0], known[0]


def test_bad_urdf_is_input_error_naming_the_file(build):
    path = FIXTURES / "malformed" / "negative_mass.urdf"
    with pytest.raises(nelu.InputError) as err:
        build(path, problem="id")
    assert err.value.exit_code == 2
    assert str(path) in str(err.value) and "mass" in str(err.value)
    assert err.value.stderr.startswith("error: ")
    with pytest.raises(nelu.InputError, match="no_such_robot.urdf: cannot read the URDF") as err:
        build(REPO / "no_such_robot.urdf", problem="id")
    assert err.value.exit_code == 2


def test_ill_posed_is_ill_posed_error_naming_the_joint(build):
    with pytest.raises(nelu.IllPosedError, match="ill-posed.*joint '") as err:
        build(FIXTURES / "malformed" / "warn_massless_subtree.urdf", problem="fd")
    assert err.value.exit_code == 1
    assert "compile" in err.value.command


def test_bad_spec_is_input_error_naming_file_and_line(build, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("version: 1\nproblem: hybrid\njoints:\n  qdd: [no_such_joint]\n")
    with pytest.raises(nelu.InputError, match=r"spec.yaml:4: joints.qdd: no movable joint named 'no_such_joint'"):
        build("ur5e.urdf", problem=spec)
    with pytest.raises(nelu.InputError, match=r"unknown key 'sideways'"):  # a dict spec: its file in the cache is named
        build("ur5e.urdf", problem={"version": 1, "sideways": 1})
    with pytest.raises(nelu.InputError, match="cannot read the problem spec"):
        build("ur5e.urdf", problem="idd")
    with pytest.raises(TypeError, match="problem must be"):
        build("ur5e.urdf", problem=3)


def test_bad_option_is_input_error(build):
    with pytest.raises(nelu.InputError, match="--max-stack") as err:
        build("ur5e.urdf", problem="id", max_stack=-1)
    assert err.value.exit_code == 2
    with pytest.raises(nelu.InputError, match="--scalar"):
        build("ur5e.urdf", problem="id", scalar="half")


def test_failed_check_is_internal_error(build, tmp_path):
    """check() of a library against a model it does not compute (its robot 1 kg heavier) exits 3."""
    solver = build("ur5e.urdf", problem="id")
    directory = tmp_path / "entry"
    shutil.copytree(solver.directory, directory)
    urdf = (directory / "robot.urdf").read_text()
    assert '<mass value="3.761"/>' in urdf
    heavier = urdf.replace('<mass value="3.761"/>', '<mass value="4.761"/>', 1)
    (directory / "robot.urdf").write_text(heavier)
    wrong = nelu.Solver(directory, nelu_exe=nelu.find_nelu())
    # the manifest names the URDF it was generated from (its FNV-1a hash): another one is bad input
    with pytest.raises(nelu.InputError, match="generated from another URDF") as err:
        wrong.check(states=10)
    assert err.value.exit_code == 2
    # past that guard (the manifest's hash made the heavier URDF's), the numbers fail
    manifest = directory / f"{solver.name}.json"
    data = json.loads(manifest.read_text())
    data["robot"]["fnv1a64"] = fnv1a64(heavier.encode())
    manifest.write_text(json.dumps(data))
    with pytest.raises(nelu.InternalError, match="FAIL") as err:
        wrong.check(states=10)
    assert err.value.exit_code == 3


def fnv1a64(data: bytes) -> str:
    """The URDF's hash as the manifest records it (robot.fnv1a64): 64-bit FNV-1a, 16 hex digits."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def test_wrong_shapes(fd, state):
    q, qd, known = state
    cases = [
        ((q[:5], qd, known), r"q has 5 entries per state, the solver takes 6"),
        ((q, qd, known[:6]), r"in has 6 entries per state, the solver takes 42 \(tau shoulder_pan_joint, .* \(42 in all"),
        ((q, qd[None], known), r"must all be 1-D \(one state\) or all 2-D"),
        ((q[None, None], qd[None, None], known[None, None]), r"must all be 1-D"),
        ((np.float64(1.0), qd, known), r"must all be 1-D"),
        ((np.zeros((3, 6)), np.zeros((2, 6)), np.zeros((3, 42))), r"as many rows each"),
    ]
    for args, message in cases:
        with pytest.raises(nelu.ShapeError, match=message):
            fd(*args)
        with pytest.raises(ValueError):  # ShapeError is a ValueError
            fd(*args)
    with pytest.raises(nelu.ShapeError, match=r"takes 42 known inputs"):
        fd(q, qd)


def test_wrong_dtypes(fd, state, build):
    q, qd, known = state
    with pytest.raises(nelu.DTypeError, match="q has dtype object"):  # integer arrays are converted (test_numpy.py)
        fd(q.astype(object), qd, known)
    with pytest.raises(nelu.DTypeError, match="mix float64 and float32"):
        fd(q, qd.astype(np.float32), known)
    with pytest.raises(nelu.DTypeError, match="complex128"):
        fd(q.astype(complex), qd, known)
    with pytest.raises(nelu.DTypeError, match="not an array of numbers"):
        fd(["a"] * 6, qd, known)
    with pytest.raises(TypeError):  # DTypeError is a TypeError
        fd(q.astype(np.complex64), qd, known)
    double_only = build("ur5e.urdf", problem="id", scalar="double")
    assert double_only.scalars == ("double",)
    with pytest.raises(nelu.DTypeError, match="no float entry point"):
        double_only(*(a.astype(np.float32) for a in state))
    # sequences take the arrays' dtype (float64 when none is an array)
    assert bitwise_equal(fd(list(q), list(qd), list(known)), fd(q, qd, known))
    f32 = fd(q.astype(np.float32), list(qd), list(known))
    assert f32.dtype == np.float32
    assert bitwise_equal(f32, fd(q.astype(np.float32), qd.astype(np.float32), known.astype(np.float32)))


def test_non_contiguous_arrays_are_copied(fd):
    """Strided, Fortran-ordered and read-only arrays are accepted (copied where needed): the same
    values as contiguous ones."""
    Q, QD, IN = random_states(fd, np.random.default_rng(17), 4)
    expected = fd(Q, QD, IN)
    wide = np.zeros((4, 12))
    wide[:, ::2] = Q
    assert not wide[:, ::2].flags.c_contiguous
    assert bitwise_equal(fd(wide[:, ::2], QD, IN), expected)
    assert bitwise_equal(fd(np.asfortranarray(Q), np.asfortranarray(QD), np.asfortranarray(IN)), expected)
    assert bitwise_equal(fd(Q[::-1], QD[::-1], IN[::-1]), expected[::-1])
    assert bitwise_equal(fd(wide[1, ::2], QD[1], IN[1]), expected[1])
    IN.setflags(write=False)
    assert bitwise_equal(fd(Q, QD, IN), expected)


def test_missing_compiler_and_failing_build(build, cache):
    before = sorted(p.name for p in cache.iterdir())
    with pytest.raises(nelu.ToolNotFoundError, match="the C\\+\\+ compiler 'nelu-no-such-compiler' is not found"):
        build("ur5e.urdf", problem="id", cxx="nelu-no-such-compiler -O2")
    with pytest.raises(FileNotFoundError):  # ToolNotFoundError is a FileNotFoundError
        build("ur5e.urdf", problem="id", cxx="nelu-no-such-compiler")
    with pytest.raises(nelu.BuildError, match="does not build") as err:
        build("ur5e.urdf", problem="id", cxxflags="-include nelu_no_such_header.h")
    assert "nelu_no_such_header.h" in err.value.stderr
    assert sorted(p.name for p in cache.iterdir()) == before  # nothing left behind, no entry


@pytest.mark.parametrize("exe", ["/bin/true", "/bin/false"])
def test_an_executable_that_is_not_nelu(build, exe):
    """Another program given as nelu is said to be one, not taken for nelu's answers (/bin/false's
    exit 1 read as an ill-posed problem, /bin/true's silence as a compile that wrote nothing)."""
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{exe} is not on this system")
    with pytest.raises(nelu.ToolNotFoundError, match=f"{exe} does not answer as nelu"):
        build("ur5e.urdf", problem="id", nelu_exe=exe)


def test_missing_nelu(build, monkeypatch):
    with pytest.raises(nelu.ToolNotFoundError, match="nelu_exe argument names '/nonexistent/nelu'"):
        build("ur5e.urdf", problem="id", nelu_exe="/nonexistent/nelu")
    monkeypatch.setenv("NELU_EXE", "/nonexistent/nelu")
    with pytest.raises(nelu.ToolNotFoundError, match="NELU_EXE names '/nonexistent/nelu'"):
        nelu.model(ROBOTS / "ur5e.urdf")


def test_derivatives_without_derivatives(fd, state):
    with pytest.raises(nelu.Error, match="compiled without derivatives"):
        fd.derivatives(*state)


def test_compile_warnings_become_python_warnings(build):
    """A warning of nelu compile (here a joint axis that is not a unit vector) is a CompileWarning,
    on a cached call too."""
    path = FIXTURES / "malformed" / "warn_non_unit_axis.urdf"
    for _ in range(2):
        with pytest.warns(nelu.CompileWarning, match="axis") as record:
            solver = build(path, problem="id")
        assert str(path) in str(record[0].message)
    assert "warning: " in solver.log


def test_check_of_a_float_only_solver_says_what_to_do(build):
    """nelu check compares the double entry points with the references: a --scalar float solver is
    bad input with the remedy, not an internal error."""
    solver = build("ur5e.urdf", problem="id", scalar="float")
    with pytest.raises(nelu.InputError, match=r"no double entry points \(--scalar float\).*--scalar both") as err:
        solver.check(states=3)
    assert err.value.exit_code == 2


def test_outputs_that_share_memory_are_refused(build):
    fd = build("ur5e.urdf", problem="fd", derivatives=True)
    q, qd, known = random_states(fd, np.random.default_rng(7), 1)
    buf = np.zeros(6 + 6 * fd.njac)
    with pytest.raises(nelu.ShapeError, match=r"out\[1\] and out\[0\] share memory"):
        fd.derivatives(q[0], qd[0], known[0], out=(buf[:6], buf[:6 * fd.njac].reshape(6, fd.njac)))
    out, jac = fd.derivatives(q[0], qd[0], known[0], out=(buf[:6], buf[6:].reshape(6, fd.njac)))  # apart: fine
    assert np.shares_memory(out, buf) and np.shares_memory(jac, buf)


def test_spec_dict_with_numpy_values(build):
    """A spec given as a dict may hold NumPy's numbers (they are written as Python's); a value JSON
    cannot hold is InputError naming its type."""
    spec = {"version": np.int64(2), "problem": "fd", "gravity": np.array([0.0, 0.0, -9.81])}
    solver = build("ur5e.urdf", problem=spec)
    assert solver.name
    with pytest.raises(nelu.InputError, match="type object") as err:
        build("ur5e.urdf", problem={"version": 2, "problem": "fd", "gravity": object()})
    assert err.value.exit_code == 2
    # NaN and infinity: JSON would write NaN and Infinity, which no YAML reader takes for numbers
    # (the CLI's message then named the generated file): said for what it is
    for bad in (float("nan"), float("inf"), np.float64("-inf")):
        with pytest.raises(nelu.InputError, match="a number is NaN or infinite") as err:
            build("ur5e.urdf", problem={"version": 2, "problem": "fd", "gravity": [0.0, 0.0, bad]})
        assert err.value.exit_code == 2


def test_workers_must_be_an_integer(fd):
    Q, QD, IN = random_states(fd, np.random.default_rng(3), 4)
    with pytest.raises(TypeError, match="workers must be an integer"):
        fd(Q, QD, IN, workers=2.5)
    with pytest.raises(ValueError, match="workers must be at least 1"):
        fd(Q, QD, IN, workers=0)


def test_cached_warnings_name_the_callers_file(build, tmp_path):
    """The cache is keyed by contents: a second file with the same contents loads the entry the
    first built, and its warnings name the second file, not the first."""
    text = (FIXTURES / "malformed" / "warn_non_unit_axis.urdf").read_bytes()
    first, second = tmp_path / "first.urdf", tmp_path / "second.urdf"
    first.write_bytes(text)
    second.write_bytes(text)
    with pytest.warns(nelu.CompileWarning) as record:
        a = build(first, problem="id")
    assert str(record[0].message).startswith(f"{first}:")
    with pytest.warns(nelu.CompileWarning) as record:
        b = build(second, problem="id")
    assert a.directory == b.directory  # the cached entry
    assert str(record[0].message).startswith(f"{second}:")
    assert str(first) not in str(record[0].message)
