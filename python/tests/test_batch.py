"""Many states per call: rows equal single calls, statuses per state (never an exception for the
whole batch), the batch entry points (NAME_batch) used when the library has them."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import nelu
from conftest import bitwise_equal, random_states


def _singles(solver, Q, QD, IN):
    return np.stack([solver(q, qd, k, return_status=True)[0] for q, qd, k in zip(Q, QD, IN)])


def test_failed_states_do_not_raise_for_the_batch(build):
    fd = build("ur5e.urdf", problem="fd")
    Q, QD, IN = random_states(fd, np.random.default_rng(7), 6)
    QD[1, 2] = np.nan  # (a NaN angle makes a pivot NaN: NELU_STATUS_SMALL_PIVOT)
    IN[4, 0] = np.inf
    with pytest.warns(nelu.StatusWarning, match=r"ur5e_fd: 2 of 6 states returned a non-OK status \(the first: row 1, NELU_STATUS_NOT_FINITE\)"):
        out = fd(Q, QD, IN)
    assert np.isnan(out[[1, 4]]).all()
    good = [0, 2, 3, 5]
    assert np.isfinite(out[good]).all()
    assert bitwise_equal(out, _singles(fd, Q, QD, IN))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # return_status=True: no warning
        out2, status = fd(Q, QD, IN, return_status=True)
    assert status.dtype == np.intc and status.tolist() == [0, 2, 0, 0, 2, 0]
    assert bitwise_equal(out2, out)
    # one state: an exception carrying the status, or the status beside with return_status=True
    with pytest.raises(nelu.StatusError, match="NELU_STATUS_NOT_FINITE") as err:
        fd(Q[1], QD[1], IN[1])
    assert err.value.status == nelu.STATUS_NOT_FINITE
    one, code = fd(Q[1], QD[1], IN[1], return_status=True)
    assert code == nelu.STATUS_NOT_FINITE and np.isnan(one).all()
    # derivatives: the same policy, jac rows NaN too
    fdd = build("ur5e.urdf", problem="fd", derivatives=True)
    with pytest.warns(nelu.StatusWarning):
        o, j = fdd.derivatives(Q, QD, IN)
    assert np.isnan(j[[1, 4]]).all() and np.isfinite(j[good]).all()
    o, j, s = fdd.derivatives(Q, QD, IN, return_status=True)
    assert s.tolist() == [0, 2, 0, 0, 2, 0]
    with pytest.raises(nelu.StatusError):
        fdd.derivatives(Q[4], QD[4], IN[4])


def test_small_pivot_status(build):
    """osim with lambda: Lambda does not exist at a kinematic singularity, where the solver returns
    NELU_STATUS_SMALL_PIVOT; the UR5e is singular with the elbow straight (q2 = 0)."""
    spec = {"version": 2, "problem": "osim", "lambda": True,
            "operational_points": [{"link": "wrist_3_link", "point": [0, 0, 0.1], "dof": 6}]}
    osim = build("ur5e.urdf", problem=spec)
    assert osim.nin == 0 and osim.nout == 72  # Lambda^-1, then Lambda
    assert osim.outputs[0] == "Lambda^-1[wrist_3_link.wx][0]" and osim.outputs[36] == "Lambda[wrist_3_link.nx][0]"
    q = np.array([0.3, -1.0, 0.0, 0.5, 0.7, 0.2])
    qd = np.zeros(osim.nv)
    out, status = osim(q, qd, return_status=True)  # no inputs: `known` may be left out
    assert status == nelu.STATUS_SMALL_PIVOT and np.isnan(out).all()
    with pytest.raises(nelu.StatusError, match="NELU_STATUS_SMALL_PIVOT") as err:
        osim(q, qd)
    assert err.value.status == nelu.STATUS_SMALL_PIVOT
    q[2] = 1.0
    out = osim(q, qd)
    lam_inv, lam = out[:36].reshape(6, 6), out[36:].reshape(6, 6)
    assert np.abs(lam @ lam_inv - np.eye(6)).max() < 1e-8
    Q = np.array([q, q * [1, 1, 0, 1, 1, 1]])
    out, status = osim(Q, np.zeros((2, 6)), return_status=True)
    assert status.tolist() == [nelu.STATUS_OK, nelu.STATUS_SMALL_PIVOT]


def test_empty_batch(build):
    fd = build("ur5e.urdf", problem="fd")
    out = fd(np.zeros((0, 6)), np.zeros((0, 6)), np.zeros((0, fd.nin)))
    assert out.shape == (0, 6)


_SHIM = """
#include "{name}.hpp"
extern "C" {{
int nelu_test_batch_calls = 0;
int {name}_batch(int n, const double* q, const double* qd, const double* in, double* out, int* status) {{
    ++nelu_test_batch_calls;
    int bad = 0;
    for (int i = 0; i < n; ++i) {{
        status[i] = {name}(q + i * {name}_NQ, qd + i * {name}_NV, in + i * {name}_NIN, out + i * {name}_NOUT);
        bad += status[i] != 0;
    }}
    return bad;
}}
}}
"""


def test_batch_entry_point_is_used_when_present(build, tmp_path):
    """A library that has NAME_batch (here a loop over NAME, beside the generated code) is called
    once per batch with the state-major arrays of the ABI; rows and statuses as single calls."""
    fd = build("ur5e.urdf", problem="fd")
    assert not fd.has_batch
    directory = tmp_path / "entry"
    shutil.copytree(fd.directory, directory)
    (directory / "shim.cpp").write_text(_SHIM.format(name=fd.name))
    include = subprocess.run([nelu.find_nelu(), "--runtime-include"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["c++", "-std=c++17", "-O0", "-shared", "-fPIC", "-I", include, "-I", str(directory), str(directory / f"{fd.name}.cpp"),
                    str(directory / "shim.cpp"), "-o", str(directory / fd.library.name)], check=True)
    shimmed = nelu.Solver(directory, nelu_exe=nelu.find_nelu())
    assert shimmed.has_batch
    calls = ctypes.c_int.in_dll(shimmed._lib, "nelu_test_batch_calls")
    Q, QD, IN = random_states(fd, np.random.default_rng(9), 7)
    QD[3, 0] = np.nan
    out, status = shimmed(Q, QD, IN, return_status=True)
    assert calls.value == 1
    assert status.tolist() == [0, 0, 0, 2, 0, 0, 0]
    assert bitwise_equal(out, _singles(fd, Q, QD, IN))
    # float32 has no NAME_f_batch in this library: the package loops over NAME_f
    f32 = [a.astype(np.float32) for a in (Q, QD, IN)]
    out_f, status_f = shimmed(*f32, return_status=True)
    assert calls.value == 1 and status_f.tolist() == status.tolist()
    assert bitwise_equal(out_f, _singles(fd, *f32))


def test_compiled_batch_forms(build):
    """batch=True: the library has NAME_batch, NAME_f_batch and the derivatives' batch forms; for n
    from 1 to 17 (not multiples of a lane width too) with failing states mixed in, every status is
    the single call's, a failing state's row is NaN as the single call's, and every other row equals
    the single call's as docs/batch.md ("Exactness") says lanes do: to rounding in double (fused
    multiply-adds may round differently), to float's accuracy in float (the lanes' own sine and
    cosine)."""
    fd = build("ur5e.urdf", problem="fd", derivatives=True, batch=True)
    assert fd.has_batch
    for symbol in ("_batch", "_f_batch", "_derivatives_batch", "_derivatives_f_batch"):
        assert hasattr(fd._lib, fd.name + symbol), symbol
    rng = np.random.default_rng(11)
    for n in range(1, 18):
        Q, QD, IN = random_states(fd, rng, n)
        if n > 2:
            IN[n // 2, 0] = np.nan
        for dtype in (np.float64, np.float32):
            args = [a.astype(dtype) for a in (Q, QD, IN)]
            out, status = fd(*args, return_status=True)
            assert status.tolist() == [fd(*row, return_status=True)[1] for row in zip(*args)]
            assert _lanes_agree(out, _singles(fd, *args))
            o, j, s = fd.derivatives(*args, return_status=True)
            for row in range(n):
                o1, j1, s1 = fd.derivatives(*(a[row] for a in args), return_status=True)
                assert s[row] == s1 and _lanes_agree(o[row], o1) and _lanes_agree(j[row], j1)


def test_check_of_a_batch_library(build):
    """check() on a library compiled with batch=True, which the package builds without nelu check's
    contraction probe: every batch form is compared with its scalar entry point and passes; the build
    may contract a * b + c, so the report says that rows that are not bitwise are judged against the
    reference, and does not claim double rows bit for bit."""
    fd = build("ur5e.urdf", problem="fd", derivatives=True, batch=True)
    report = fd.check(states=20)
    assert "PASS" in report and "FAIL" not in report
    for form in ("_batch", "_f_batch", "_derivatives_batch", "_derivatives_f_batch"):
        assert f"{fd.name}{form} (W = " in report, form
    assert "without nelu check's contraction probe" in report
    assert "double rows bit for bit" not in report


def _lanes_agree(batch: np.ndarray, singles: np.ndarray) -> bool:
    """Same shape, dtype and NaN rows; elsewhere max |batch - singles| <= tol max |singles| row by
    row, tol 1e-13 in double (rounding of contracted products) and 1e-4 in float."""
    batch, singles = np.atleast_2d(batch), np.atleast_2d(singles)
    if batch.shape != singles.shape or batch.dtype != singles.dtype:
        return False
    if not np.array_equal(np.isnan(batch), np.isnan(singles)):
        return False
    tol = 1e-13 if batch.dtype == np.float64 else 1e-4
    for b, r in zip(batch.astype(np.float64), singles.astype(np.float64)):
        if np.isnan(r).all():
            continue
        if np.max(np.abs(b - r)) > tol * max(np.max(np.abs(r)), np.finfo(np.float64).tiny):
            return False
    return True
