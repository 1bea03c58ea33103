"""Rigid contacts from Python (docs/contacts.md): the Mini Cheetah's four point feet (problem fd) and
their impact (problem impulse), compiled with nelu.compile, against physics computed here
independently of nelu's contact code:

- the contact forces, applied as known external wrenches to the feet in a solver without contacts,
  give the same accelerations (M qdd + h = tau + J^T lambda);
- each foot's classical acceleration, from a NumPy forward kinematics of the URDF
  (tests/kinematics.py) differentiated along the motion, is zero, or Baumgarte's -(Kp e_p + Kd e_v);
- local and local_world_aligned contacts give the same motion, forces rotated by each foot's
  orientation;
- an impact with restitution r reverses each foot's velocity times r, and M (v+ - v-) = J^T Lambda
  (the solver without contacts at zero velocity gives M^-1 J^T Lambda);
- batch rows equal single calls, the Jacobian equals central differences of the value solver;
- slots are named as the generated header names them, and bad specs raise the CLI's errors.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import nelu
from conftest import REPO, bitwise_equal
from kinematics import Kinematics, rot_axis, rot_rpy

URDF = "quadruped_minicheetah.urdf"
FEET = {"fr": "FR_foot", "fl": "FL_foot", "rr": "RR_foot", "rl": "RL_foot"}
#: The horizon example's spec: four local_world_aligned feet, Baumgarte kd 50 (no references).
EXAMPLE_SPEC = REPO / "examples" / "contacts" / "minicheetah_feet.yaml"
#: Solvers the tests build: double only (the float entry points are covered by test_solvers).
DOUBLE = {"scalar": "double"}


def contacts_spec(frame: str | None = None, problem: str = "fd", **extra) -> dict:
    """Four point feet, no Baumgarte: fd (accelerations, forces) or impulse (velocities, impulses)."""
    contacts = [{"name": n, "link": link, "type": "point", **({"frame": frame} if frame else {})} for n, link in FEET.items()]
    spec = {"version": 2, "problem": problem, "floating_base": True, "contacts": contacts, **extra}
    if problem == "fd":
        spec.update({"external_wrenches": "zero", "outputs": ["joint_accelerations", "contact_forces"]})
    else:
        spec["outputs"] = ["joint_velocities", "contact_impulses"]
    return spec


#: The mix of the issue: frames, Baumgarte gains per component, references only where kp != 0.
MIXED_SPEC = {"version": 2, "problem": "fd", "floating_base": True, "external_wrenches": "zero",
              "contacts": [{"name": "fr", "link": "FR_foot", "type": "point"},
                           {"name": "fl", "link": "FL_foot", "type": "point", "frame": "local_world_aligned"},
                           {"name": "rr", "link": "RR_foot", "type": "point", "baumgarte": {"kp": 10, "kd": 2}},
                           {"name": "rl", "link": "RL_foot", "type": "point", "frame": "local_world_aligned",
                            "baumgarte": {"kp": [10, 20, 30], "kd": 1}}],
              "outputs": ["joint_accelerations", "contact_forces"]}
#: Forward dynamics without contacts, the feet's external wrenches inputs (foot frame, foot origin).
FREE_SPEC = {"version": 2, "problem": "fd", "floating_base": True,
             "external_wrenches": {"default": "zero", "input": list(FEET.values())}}
RESTITUTION = 0.3


@pytest.fixture(scope="module")
def local(build):
    return build(URDF, problem=contacts_spec(), **DOUBLE)


@pytest.fixture(scope="module")
def world_aligned(build):
    return build(URDF, problem=contacts_spec("local_world_aligned"), **DOUBLE)


@pytest.fixture(scope="module")
def mixed(build):
    return build(URDF, problem=MIXED_SPEC, derivatives=True, **DOUBLE)


@pytest.fixture(scope="module")
def free(build):
    return build(URDF, problem=FREE_SPEC, **DOUBLE)


@pytest.fixture(scope="module")
def example(build):
    """The horizon example's solver, with its batch forms and derivatives (examples/python/
    contacts_horizon.py builds the same: one cache entry)."""
    return build(URDF, problem=EXAMPLE_SPEC, derivatives=True, batch=True, **DOUBLE)


@pytest.fixture(scope="module")
def impulse(build):
    return build(URDF, problem=contacts_spec(problem="impulse", restitution=RESTITUTION), derivatives=True, batch=True, **DOUBLE)


@pytest.fixture(scope="module")
def kin(local):
    return Kinematics(REPO / "robots" / URDF, local.q_names, local.qd_names)


def standing_states(solver: nelu.Solver, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n states of a crouching quadruped (bent knees, the base tilted), random velocities and
    torques of order 1 and 10 N m; references (contact_reference inputs) 1 to 3 cm off the feet."""
    q = np.zeros((n, solver.nq))
    q[:, 2] = 0.3
    axis = rng.normal(size=(n, 3))
    angle = rng.uniform(-0.4, 0.4, (n, 1))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    q[:, 3:6] = np.sin(angle / 2) * axis
    q[:, 6:7] = np.cos(angle / 2)
    legs = np.tile([0.0, 0.8, -1.6], 4)  # abad, hip, knee: the feet under the hips
    q[:, 7:] = legs + rng.uniform(-0.3, 0.3, (n, 12))
    qd = rng.normal(size=(n, solver.nv))
    known = np.zeros((n, solver.nin))
    for k, slot in enumerate(solver.input_slots):
        if slot["quantity"] == "joint_torque":
            known[:, k] = 0 if slot["joint"] == "root_joint" else rng.normal(scale=10, size=n)
    return q, qd, known


def references(solver: nelu.Solver, kin: Kinematics, q: np.ndarray, known: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """known with each contact_reference slot set to its foot's position at q moved 1 to 3 cm."""
    known = known.copy()
    for k, slot in enumerate(solver.input_slots):
        if slot["quantity"] == "contact_reference":
            c = "xyz".index(slot["component"])
            for row in range(q.shape[0]):
                known[row, k] = kin.pose(q[row], slot["link"])[1][c] + rng.uniform(0.01, 0.03) * rng.choice([-1, 1])
    return known


def slots_of(solver: nelu.Solver, side: str, contact: str) -> list[int]:
    """The indices of a contact's slots among the solver's inputs or outputs."""
    slots = solver.input_slots if side == "in" else solver.output_slots
    return [k for k, s in enumerate(slots) if s.get("contact") == contact]


def relative(a, b) -> float:
    """max |a - b| / max(1, max |b|); infinite when a difference is NaN (Python's max would drop it)."""
    d = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    if d.size and np.isnan(d).any():
        return float("inf")
    return float(d.max(initial=0.0) / max(1.0, np.abs(np.asarray(b, dtype=float)).max(initial=0.0)))


# -- slots -------------------------------------------------------------------------------------------


def test_slots_are_named_as_the_header_names_them(example, impulse, mixed):
    nv = example.nv
    assert example.problem == "fd" and example.floating_base
    assert example.inputs[:nv] == tuple(f"tau root_joint.{c}" for c in ("nx", "ny", "nz", "fx", "fy", "fz")) + tuple(
        f"tau {j}" for j in example.qd_names[6:])
    assert example.nin == nv  # kd alone: no references
    assert example.outputs[nv:] == tuple(f"{c}.{x}" for c in FEET for x in ("fx", "fy", "fz"))
    assert example.outputs[:6] == tuple(f"qdd root_joint.{c}" for c in ("wx", "wy", "wz", "vx", "vy", "vz"))
    assert example.output_slots[nv] == {"quantity": "contact_force", "contact": "fr", "link": "FR_foot", "component": "fx",
                                        "frame": "local_world_aligned"}
    assert example.jac_columns[2 * nv:] == example.inputs
    # every label is the header's: "out[18]  fr.fx (contact on FR_foot, ...)"
    header = (example.directory / f"{example.name}.hpp").read_text()
    for side, labels in (("in", example.inputs), ("out", example.outputs)):
        for k, label in enumerate(labels):
            assert f" {side}[{k}]  {label}\n" in header or f" {side}[{k}]  {label} (" in header
    # references only where some kp is not zero: rr and rl of the mix
    assert mixed.inputs[mixed.nv:] == tuple(f"{c}.{x}" for c in ("rr", "rl") for x in "xyz")
    assert mixed.input_slots[mixed.nv] == {"quantity": "contact_reference", "contact": "rr", "link": "RR_foot", "component": "x",
                                           "frame": "world"}
    assert mixed.jac_columns[2 * nv:] == mixed.inputs
    assert [mixed.output_slots[k]["frame"] for k in range(mixed.nv, mixed.nout, 3)] == ["local", "local_world_aligned", "local",
                                                                                       "local_world_aligned"]
    # impulse: no inputs; v+ and the impulses
    assert impulse.problem == "impulse" and impulse.nin == 0
    assert impulse.outputs[:nv] == tuple(f"v+ {s[4:]}" for s in example.outputs[:nv])
    assert impulse.outputs[nv:] == example.outputs[nv:]
    assert {s["quantity"] for s in impulse.output_slots} == {"joint_velocity", "contact_impulse"}
    assert impulse.jac_columns == example.jac_columns[:2 * nv]


# -- physics -----------------------------------------------------------------------------------------


def test_forces_act_as_external_wrenches_and_hold_the_feet(local, free, kin):
    """lambda (local frame: the foot's axes) applied to the feet as known wrenches [0 0 0 f] gives
    the same qdd; each foot's classical acceleration is zero."""
    rng = np.random.default_rng(31)
    Q, QD, TAU = standing_states(local, rng, 8)
    out = local(Q, QD, TAU)
    qdd, lam = out[:, :local.nv], out[:, local.nv:]
    known = np.zeros((8, free.nin))
    known[:, :free.nv] = TAU
    for k, slot in enumerate(free.input_slots):
        if slot["quantity"] == "external_wrench" and slot["component"] in ("fx", "fy", "fz"):
            contact = next(c for c, link in FEET.items() if link == slot["link"])
            known[:, k] = lam[:, slots_of(local, "out", contact)[("fx", "fy", "fz").index(slot["component"])] - local.nv]
    assert relative(free(Q, QD, known), qdd) < 1e-10
    assert np.abs(lam[:, 2::3]).max() > 1  # the feet carry load
    for row in range(8):
        for link in FEET.values():
            _, _, _, a = kin.point_motion(Q[row], QD[row], qdd[row], link)
            assert np.abs(a).max() < 1e-7 * max(1.0, np.abs(qdd[row]).max())


def test_local_world_aligned_rotates_the_forces(local, world_aligned, kin):
    """The same contacts in local_world_aligned: the same accelerations, each force the local one
    rotated by its foot's orientation (norms equal)."""
    Q, QD, TAU = standing_states(local, np.random.default_rng(32), 8)
    a, b = local(Q, QD, TAU), world_aligned(Q, QD, TAU)
    nv = local.nv
    assert relative(b[:, :nv], a[:, :nv]) < 1e-10
    for row in range(8):
        for i, (contact, link) in enumerate(FEET.items()):
            R, _ = kin.pose(Q[row], link)
            f_local, f_world = a[row, nv + 3 * i:nv + 3 * i + 3], b[row, nv + 3 * i:nv + 3 * i + 3]
            assert relative(f_world, R @ f_local) < 1e-10
            assert abs(np.linalg.norm(f_world) - np.linalg.norm(f_local)) <= 1e-10 * max(1.0, np.linalg.norm(f_local))


def test_baumgarte_corrects_toward_the_references(mixed, kin):
    """Each foot's classical acceleration a satisfies R^T a = -(Kp R^T (p - p_ref) + Kd R^T v)
    (the gains act on the foot's own axes in both frames); zero for the feet without gains."""
    rng = np.random.default_rng(33)
    Q, QD, IN = standing_states(mixed, rng, 6)
    IN = references(mixed, kin, Q, IN, rng)
    out = mixed(Q, QD, IN)
    gains = {"fr": (0, 0), "fl": (0, 0), "rr": (np.full(3, 10.0), np.full(3, 2.0)), "rl": (np.array([10.0, 20, 30]), np.full(3, 1.0))}
    for row in range(6):
        for contact, link in FEET.items():
            R, p, v, a = kin.point_motion(Q[row], QD[row], out[row, :mixed.nv], link)
            kp, kd = gains[contact]
            ref = IN[row, slots_of(mixed, "in", contact)] if slots_of(mixed, "in", contact) else p
            expected = -(kp * (R.T @ (p - ref)) + kd * (R.T @ v))
            assert np.abs(R.T @ a - expected).max() < 1e-7 * max(1.0, np.abs(out[row, :mixed.nv]).max())


def test_impulse_reverses_the_feet_velocities(impulse, free, kin):
    """v+ from v-: each foot's velocity becomes -r times its velocity before; M (v+ - v-) = J^T
    Lambda (the solver without contacts at zero velocity and torque, with and without the impulses
    as wrenches, differ by M^-1 J^T Lambda); the kinetic energy does not grow (M from the same
    solver's columns)."""
    rng = np.random.default_rng(34)
    Q, VM, _ = standing_states(impulse, rng, 8)
    out = impulse(Q, VM)
    vplus, big_lambda = out[:, :impulse.nv], out[:, impulse.nv:]
    zero = np.zeros_like(VM)
    for row in range(8):
        for link in FEET.values():
            _, _, before, _ = kin.point_motion(Q[row], VM[row], zero[row], link)
            _, _, after, _ = kin.point_motion(Q[row], vplus[row], zero[row], link)
            assert np.abs(after + RESTITUTION * before).max() < 1e-8 * max(1.0, np.abs(before).max())
    wrench = np.zeros((8, free.nin))
    for k, slot in enumerate(free.input_slots):
        if slot["quantity"] == "external_wrench" and slot["component"] in ("fx", "fy", "fz"):
            contact = next(c for c, link in FEET.items() if link == slot["link"])
            wrench[:, k] = big_lambda[:, slots_of(impulse, "out", contact)[("fx", "fy", "fz").index(slot["component"])] - impulse.nv]
    response = free(Q, zero, wrench) - free(Q, zero, np.zeros_like(wrench))
    assert relative(vplus - VM, response) < 1e-10
    # kinetic energy with M^-1's columns: M^-1 e_k = fd(q, 0, e_k) - fd(q, 0, 0)
    for row in range(2):
        unit = np.zeros((free.nv, free.nin))
        unit[:, :free.nv] = np.eye(free.nv)
        m_inv = (free(np.tile(Q[row], (free.nv, 1)), np.zeros((free.nv, free.nv)), unit)
                 - free(Q[row], zero[row], np.zeros(free.nin))).T
        m = np.linalg.inv(m_inv)
        assert vplus[row] @ m @ vplus[row] <= VM[row] @ m @ VM[row] * (1 + 1e-12)


# -- batches and derivatives --------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["example", "impulse"])
def test_batch_rows_equal_single_calls(which, request, kin):
    """A horizon of 50 states in one call of NAME_batch and NAME_derivatives_batch: each row equals
    the single-state call to 1e-12 (relative)."""
    solver = request.getfixturevalue(which)
    assert solver.has_batch
    rng = np.random.default_rng(35)
    Q, QD, IN = standing_states(solver, rng, 50)
    IN = references(solver, kin, Q, IN, rng)
    args = (Q, QD, IN) if solver.nin else (Q, QD)
    out = solver(*args)
    OUT, JAC = solver.derivatives(*args)
    worst = 0.0
    for row in range(50):
        one = solver(*(a[row] for a in args))
        out_one, jac_one = solver.derivatives(*(a[row] for a in args))
        worst = max(worst, relative(out[row], one), relative(OUT[row], out_one), relative(JAC[row], jac_one))
    assert worst <= 1e-12
    assert bitwise_equal(OUT, solver.derivatives(*args)[0])  # deterministic
    assert relative(OUT, out) < 1e-13


@pytest.mark.parametrize("which", ["example", "impulse", "mixed"])
def test_derivatives_equal_central_differences(which, request, kin):
    """jac = d out / d[q-tangent, qd, in] against central differences of the value solver (q
    perturbed as q (+) d), relative to each output's largest derivative: 1e-6."""
    solver = request.getfixturevalue(which)
    rng = np.random.default_rng(36)
    Q, QD, IN = standing_states(solver, rng, 3)
    IN = references(solver, kin, Q, IN, rng)
    nv = solver.nv
    for q, qd, known in zip(Q, QD, IN):
        out, jac = solver.derivatives(q, qd, known) if solver.nin else solver.derivatives(q, qd)
        assert jac.shape == (solver.nout, 2 * nv + solver.nin)

        def value(d):
            return solver(kin.step(q, d[:nv]), qd + d[nv:2 * nv], known + d[2 * nv:]) if solver.nin else \
                solver(kin.step(q, d[:nv]), qd + d[nv:2 * nv])

        differences = np.empty_like(jac)
        for c in range(jac.shape[1]):
            h = 1e-6 if c < 2 * nv else 1e-6 * max(1.0, abs(float(known[c - 2 * nv])))
            d = np.zeros(jac.shape[1])
            d[c] = h
            differences[:, c] = (value(d) - value(-d)) / (2 * h)
        scale = np.maximum(1.0, np.abs(jac).max(axis=1, keepdims=True))
        assert (np.abs(jac - differences) / scale).max() < 1e-6
        assert relative(out, value(np.zeros(jac.shape[1]))) < 1e-13


def test_check_passes(example):
    """nelu check on the loaded library: values, batch forms and the Jacobian."""
    report = example.check(states=20)
    assert "PASS" in report


# -- 6-D contacts -----------------------------------------------------------------------------------


def test_six_d_contacts(build):
    """The humanoid's two soles (local_world_aligned, Baumgarte kd) and the UR5e's tool held (with
    damping): they compile from Python, and nelu check passes on the loaded libraries."""
    soles = build("humanoid_winter.urdf", problem={
        "version": 2, "problem": "fd", "floating_base": True, "external_wrenches": "zero",
        "contacts": [{"name": "l_sole", "link": "l_foot", "type": "6d", "frame": "local_world_aligned", "baumgarte": {"kd": 5}},
                     {"name": "r_sole", "link": "r_foot", "type": "6d", "frame": "local_world_aligned", "baumgarte": {"kd": 5}}],
        "outputs": ["joint_accelerations", "contact_forces"]}, **DOUBLE)
    assert soles.outputs[soles.nv:] == tuple(f"{c}.{x}" for c in ("l_sole", "r_sole") for x in ("nx", "ny", "nz", "fx", "fy", "fz"))
    assert soles.nin == soles.nv  # kd only: no references
    assert "PASS" in soles.check(states=20)
    tool = build("ur5e.urdf", problem={
        "version": 2, "problem": "fd", "damping": 1e-6, "external_wrenches": "zero",
        "contacts": [{"name": "tool", "link": "tool0", "type": "6d"}]}, **DOUBLE)
    assert tool.outputs == tuple(f"qdd {j}" for j in tool.qd_names) + tuple(f"tool.{x}" for x in ("nx", "ny", "nz", "fx", "fy", "fz"))
    assert "PASS" in tool.check(states=20)


def quaternion_of(R: np.ndarray) -> np.ndarray:
    """The unit quaternion (x, y, z, w), w >= 0, of a rotation matrix (Shepperd's largest pivot)."""
    tr = np.trace(R)
    if tr >= R.diagonal().max():
        w = 0.5 * np.sqrt(1 + tr)
        q = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1], 0]) / (4 * w)
        q[3] = w
    else:
        i = int(np.argmax(R.diagonal()))
        j, k = (i + 1) % 3, (i + 2) % 3
        t = np.sqrt(1 + R[i, i] - R[j, j] - R[k, k])
        q = np.zeros(4)
        q[i], q[j], q[k], q[3] = 0.5 * t, (R[j, i] + R[i, j]) / (2 * t), (R[k, i] + R[i, k]) / (2 * t), (R[k, j] - R[j, k]) / (2 * t)
    return q if q[3] >= 0 else -q


def test_six_d_baumgarte_kp_reads_a_reference_placement(build):
    """A 6-D contact's Kp (Pinocchio's -log6 placement error) reads its reference as x y z qx qy qz
    qw in the world. With the reference at the contact frame's own placement (from a NumPy forward
    kinematics of the URDF) the error is zero: the same accelerations and forces as without Kp;
    -2q is the same rotation as q (the solver uses q / |q|); a reference turned by 0.3 rad moves the
    solution."""
    contact = {"name": "tool", "link": "tool0", "type": "6d", "origin": {"xyz": [0, 0, 0.05], "rpy": [0.4, 0, 0.2]}}
    spec = {"version": 2, "problem": "fd", "damping": 1e-4, "external_wrenches": "zero", "outputs": ["joint_accelerations", "contact_forces"]}
    held = build("ur5e.urdf", problem={**spec, "contacts": [{**contact, "baumgarte": {"kp": [10, 20, 30, 40, 50, 60], "kd": 5}}]}, **DOUBLE)
    plain = build("ur5e.urdf", problem={**spec, "contacts": [{**contact, "baumgarte": {"kd": 5}}]}, **DOUBLE)
    nv = held.nv
    assert held.inputs[nv:] == tuple(f"tool.{x}" for x in ("x", "y", "z", "qx", "qy", "qz", "qw"))
    assert {held.input_slots[k]["frame"] for k in range(nv, held.nin)} == {"world"}
    kin = Kinematics(REPO / "robots" / "ur5e.urdf", held.q_names, held.qd_names)
    rng = np.random.default_rng(35)
    n = 6
    Q, QD, TAU = rng.uniform(-2, 2, (n, held.nq)), rng.normal(size=(n, nv)), rng.normal(scale=10, size=(n, nv))
    IN, turned = np.zeros((n, held.nin)), np.zeros((n, held.nin))
    IN[:, :nv] = turned[:, :nv] = TAU
    for row in range(n):
        R, p = kin.pose(Q[row], "tool0")
        Rc, pc = R @ rot_rpy([0.4, 0, 0.2]), p + R @ np.array([0, 0, 0.05])
        IN[row, nv:] = np.concatenate([pc, quaternion_of(Rc)])
        turned[row, nv:] = np.concatenate([pc, quaternion_of(Rc @ rot_axis(np.array([0.6, 0, 0.8]), 0.3))])
    expected = plain(Q, QD, TAU)
    assert relative(held(Q, QD, IN), expected) < 1e-9
    flipped = IN.copy()
    flipped[:, nv + 3:] *= -2
    assert relative(held(Q, QD, flipped), expected) < 1e-9
    assert relative(held(Q, QD, turned), expected) > 1e-3


# -- errors -------------------------------------------------------------------------------------------


def test_bad_contact_specs_raise_the_cli_errors(build, tmp_path):
    spec = tmp_path / "feet.yaml"

    def compile_text(text: str, urdf: str = URDF):
        spec.write_text(textwrap.dedent(text))
        return build(urdf, problem=spec, **DOUBLE)

    head = "version: 2\nproblem: fd\nfloating_base: true\ncontacts:\n"
    with pytest.raises(nelu.InputError, match=r"feet.yaml:5: contact 'fr': no link named 'FR_fot'") as err:
        compile_text(head + "  - {name: fr, link: FR_fot, type: point}\n")
    assert err.value.exit_code == 2 and err.value.stderr.startswith("error: ")
    with pytest.raises(nelu.InputError, match=r"feet.yaml:5: contact 'fr': type 'line': expected point or 6d"):
        compile_text(head + "  - {name: fr, link: FR_foot, type: line}\n")
    with pytest.raises(nelu.InputError, match=r"feet.yaml:6: outputs: 'link_accelerations' with 'contacts:' is not supported yet"):
        compile_text(head + "  - {name: fr, link: FR_foot, type: point}\noutputs: [link_accelerations]\n")
    with pytest.raises(nelu.InputError, match=r"'restitution' must be a finite number in \[0, 1\] \(here 1.5\)"):
        build(URDF, problem=contacts_spec(problem="impulse", restitution=1.5), **DOUBLE)
    # two 6-D contacts on one foot: their forces are not unique (exit 1, the dependent contacts named)
    with pytest.raises(nelu.IllPosedError, match=r"not determined: lambda\[l\]\.nx.*lambda\[l2\]\.fz") as err:
        compile_text(head + "  - {name: l, link: l_foot, type: 6d}\n  - {name: l2, link: l_foot, type: 6d, origin: {xyz: [0.1, 0, 0]}}\n",
                     "humanoid_winter.urdf")
    assert err.value.exit_code == 1 and "damping: MU" in str(err.value)
