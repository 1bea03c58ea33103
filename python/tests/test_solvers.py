"""Solvers compiled from Python give exactly what their C functions give, in double and float, one
state at a time and in batches; id and fd are inverse to each other; check() passes."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

import nelu
from conftest import ROBOTS, bitwise_equal, direct, random_states

#: The shipped robots' id and fd, and the legged robots with a floating base.
CASES = [(urdf, problem, False) for urdf in ("ur5e.urdf", "panda_gaz2019.urdf", "quadruped_minicheetah.urdf", "humanoid_winter.urdf")
         for problem in ("id", "fd")] + [("quadruped_minicheetah.urdf", "id", True), ("quadruped_minicheetah.urdf", "fd", True),
                                         ("humanoid_winter.urdf", "id", True)]


@pytest.mark.parametrize("urdf,problem,floating", CASES, ids=[f"{u[:-5]}-{p}{'-floating' if f else ''}" for u, p, f in CASES])
def test_values_equal_the_c_functions_bitwise(build, urdf, problem, floating):
    solver = build(urdf, problem=problem, floating_base=floating)
    assert solver.problem == problem and solver.floating_base == floating
    assert len(solver.q_names) == solver.nq and len(solver.qd_names) == solver.nv
    assert len(solver.inputs) == solver.nin and len(solver.outputs) == solver.nout
    rng = np.random.default_rng(23)
    Q, QD, IN = random_states(solver, rng, 5)
    for q, qd, known in zip(Q, QD, IN):
        out = solver(q, qd, known)
        status, (expected,) = direct(solver, solver.name, q, qd, known, [solver.nout])
        assert status == nelu.STATUS_OK
        assert out.dtype == np.float64 and out.shape == (solver.nout,)
        assert bitwise_equal(out, expected)
        # float32 arrays call NAME_f: its bits, not double's rounded to float
        out_f = solver(q.astype(np.float32), qd.astype(np.float32), known.astype(np.float32))
        status_f, (expected_f,) = direct(solver, solver.name + "_f", q.astype(np.float32), qd.astype(np.float32),
                                         known.astype(np.float32), [solver.nout], ctypes.c_float)
        assert status_f == nelu.STATUS_OK
        assert out_f.dtype == np.float32
        assert bitwise_equal(out_f, expected_f)
        assert np.allclose(out_f, out, rtol=1e-3, atol=1e-3 * np.abs(out).max())
    # a batch gives each row as the single call does, in either precision
    batch = solver(Q, QD, IN)
    assert batch.shape == (5, solver.nout)
    assert bitwise_equal(batch, np.stack([solver(q, qd, k) for q, qd, k in zip(Q, QD, IN)]))
    f32 = [a.astype(np.float32) for a in (Q, QD, IN)]
    assert bitwise_equal(solver(*f32), np.stack([solver(*row) for row in zip(*f32)]))


def test_float_entry_points_are_not_double_rounded(build):
    """At least one output of NAME_f differs from NAME's rounded to float: float32 arrays reach the
    float solver, not the double one."""
    solver = build("panda_gaz2019.urdf", problem="fd")
    Q, QD, IN = random_states(solver, np.random.default_rng(1), 20)
    f32 = solver(Q.astype(np.float32), QD.astype(np.float32), IN.astype(np.float32))
    rounded = solver(Q.astype(np.float32).astype(np.float64), QD.astype(np.float32).astype(np.float64),
                     IN.astype(np.float32).astype(np.float64)).astype(np.float32)
    assert not bitwise_equal(f32, rounded)


@pytest.mark.parametrize("urdf,floating", [("ur5e.urdf", False), ("quadruped_minicheetah.urdf", True), ("humanoid_winter.urdf", False)])
def test_fd_inverts_id(build, urdf, floating):
    """fd(q, qd, [id(q, qd, [qdd, f]), f]) = qdd: the two solvers are independent programs (a
    triangular solve against a sparse LU with fill); agreement to 1e-10 relative."""
    id_ = build(urdf, problem="id", floating_base=floating)
    fd = build(urdf, problem="fd", floating_base=floating)
    nv = id_.nv
    assert id_.inputs[nv:] == fd.inputs[nv:]  # the same wrench slots after qdd / tau
    Q, QD, IN = random_states(id_, np.random.default_rng(5), 30)
    tau = id_(Q, QD, IN)
    qdd = fd(Q, QD, np.hstack([tau, IN[:, nv:]]))
    err = np.abs(qdd - IN[:, :nv]).max() / max(1.0, np.abs(IN[:, :nv]).max())
    assert err < 1e-10


def test_sensor_spec(build):
    """The UR5e's wrist force/torque spec: slots name the sensor, values equal the C function's."""
    solver = build("ur5e.urdf", problem=ROBOTS / "specs" / "ur5e_wrist_ft.yaml")
    assert solver.problem == "id"
    assert [s for s in solver.inputs if s.startswith("wrist_ft.")] == [f"wrist_ft.{c}" for c in ("nx", "ny", "nz", "fx", "fy", "fz")]
    assert "f^x wrist_3_link.fz" in solver.outputs
    Q, QD, IN = random_states(solver, np.random.default_rng(2), 4)
    out = solver(Q, QD, IN)
    for row, (q, qd, known) in enumerate(zip(Q, QD, IN)):
        status, (expected,) = direct(solver, solver.name, q, qd, known, [solver.nout])
        assert status == 0 and bitwise_equal(out[row], expected)


def test_spec_as_a_dict(build):
    """A spec given as a dict: fd without external wrenches takes tau alone, and agrees with the
    preset fd (every wrench an input, here zero) to rounding."""
    plain = build("ur5e.urdf", problem={"version": 1, "problem": "fd", "external_wrenches": "zero"})
    full = build("ur5e.urdf", problem="fd")
    assert plain.nin == plain.nv == 6
    assert plain.inputs == full.inputs[:6]
    Q, QD, TAU = random_states(plain, np.random.default_rng(3), 10)
    a = plain(Q, QD, TAU)
    b = full(Q, QD, np.hstack([TAU, np.zeros((10, full.nin - 6))]))
    assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()


def test_derivatives(build):
    """NAME_derivatives from Python: equal to the C function bitwise (double and float), its out
    equal to the value solver's, its tau columns M^-1 as central differences of fd give them, and
    batch rows equal to single calls."""
    fd = build("ur5e.urdf", problem="fd", derivatives=True)
    assert fd.njac == 2 * fd.nv + fd.nin == len(fd.jac_columns)
    assert fd.jac_columns[:2] == ("q shoulder_pan_joint", "q shoulder_lift_joint")
    assert fd.jac_columns[6] == "qd shoulder_pan_joint"
    assert fd.jac_columns[12:18] == fd.inputs[:6]
    Q, QD, IN = random_states(fd, np.random.default_rng(4), 3)
    for q, qd, known in zip(Q, QD, IN):
        out, jac = fd.derivatives(q, qd, known)
        assert jac.shape == (fd.nout, fd.njac)
        status, (out_c, jac_c) = direct(fd, fd.name + "_derivatives", q, qd, known, [fd.nout, fd.nout * fd.njac])
        assert status == 0
        assert bitwise_equal(out, out_c) and bitwise_equal(jac.ravel(), jac_c)
        value = fd(q, qd, known)
        assert np.abs(out - value).max() <= 1e-13 * np.abs(value).max()
        h = 1e-3  # qdd is affine in tau: the differences are exact to rounding
        for k in range(fd.nv):
            up, down = known.copy(), known.copy()
            up[k] += h
            down[k] -= h
            column = (fd(q, qd, up) - fd(q, qd, down)) / (2 * h)
            assert np.abs(jac[:, 2 * fd.nv + k] - column).max() <= 1e-8 * np.abs(column).max()
        f32 = [a.astype(np.float32) for a in (q, qd, known)]
        out_f, jac_f = fd.derivatives(*f32)
        status_f, (out_fc, jac_fc) = direct(fd, fd.name + "_derivatives_f", *f32, [fd.nout, fd.nout * fd.njac], ctypes.c_float)
        assert status_f == 0 and jac_f.dtype == np.float32
        assert bitwise_equal(out_f, out_fc) and bitwise_equal(jac_f.ravel(), jac_fc)
    OUT, JAC = fd.derivatives(Q, QD, IN)
    assert OUT.shape == (3, fd.nout) and JAC.shape == (3, fd.nout, fd.njac)
    for row in range(3):
        out, jac = fd.derivatives(Q[row], QD[row], IN[row])
        assert bitwise_equal(OUT[row], out) and bitwise_equal(JAC[row], jac)


def test_derivative_columns_in_lanes(build):
    """NAME_derivatives with its columns in vector lanes (the default) and column by column
    (lanes=False, nelu compile --no-lanes): the same Jacobian to rounding."""
    spec = ROBOTS / "specs" / "ur5e_hybrid.yaml"
    on = build("ur5e.urdf", problem=str(spec), derivatives=True)
    off = build("ur5e.urdf", problem=str(spec), derivatives=True, lanes=False)
    assert "columns in lanes" in on.log and "columns in lanes" not in off.log
    Q, QD, IN = random_states(on, np.random.default_rng(28), 5)
    out_on, jac_on = on.derivatives(Q, QD, IN)
    out_off, jac_off = off.derivatives(Q, QD, IN)
    assert bitwise_equal(out_on, out_off)
    assert np.abs(jac_on - jac_off).max() <= 1e-13 * np.abs(jac_off).max()


def test_check_passes_on_the_built_library(build):
    solver = build("ur5e.urdf", problem="fd", derivatives=True)
    report = solver.check(states=30)
    assert f"loaded from {solver.library}" in report
    assert "PASS" in report
    sensor = build("ur5e.urdf", problem=ROBOTS / "specs" / "ur5e_wrist_ft.yaml")
    assert "PASS" in sensor.check(states=30)


def test_snap_reaches_the_compiler(build, tmp_path):
    """snap=TOL compiles the idealized model: the manifest records the changes, and check() (which
    reloads with the manifest's tolerance) passes."""
    jittered = tmp_path / "ur5e_jittered.urdf"
    subprocess.run([nelu.find_nelu(), "robot", "perturb", str(ROBOTS / "ur5e.urdf"), "--jitter", "1e-9", "--seed", "1",
                    "-o", str(jittered)], check=True)
    exact, snapped = build(jittered, problem="id"), build(jittered, problem="id", snap=1e-6)
    assert "snap" not in exact.manifest
    assert snapped.manifest["snap"]["tolerance"] == 1e-6 and snapped.manifest["snap"]["changes"]
    assert "--snap 1e-06 replaced" in snapped.log
    assert snapped.manifest["ops"]["mul"] < exact.manifest["ops"]["mul"]
    assert "PASS" in snapped.check(states=20)
