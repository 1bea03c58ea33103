# %% [markdown]
# # A horizon of a quadruped's contact dynamics and its derivatives, in one batch call
#
# What a DDP or SQP iteration of a legged robot's model-predictive controller needs at every knot
# of its horizon: the contact dynamics (accelerations and contact forces) and their derivatives
# with respect to the state and the torques. The knots are independent of each other: one call of
# the batch form for all 50 knots. The robot is the Mini Cheetah (robots/quadruped_minicheetah.urdf) with a floating base,
# standing on its four feet (examples/contacts/minicheetah_feet.yaml: point contacts,
# local_world_aligned, Baumgarte kd 50; docs/contacts.md), its motors holding a crouch with a PD law.
#
# Run it as a script (`python examples/python/contacts_horizon.py [PLOT.png]`) or cell by cell
# (`# %%` cells). Needs the nelu package (README, "From Python"); the first run compiles the solver
# and builds it with g++ -O2 (about two minutes on one core: 72,000 operations of derivatives, in
# scalar and batch forms; later runs load it from the cache). For the plot, matplotlib.
# examples/contacts/ does the same from C++.

# %%
import sys
import time
from pathlib import Path

import numpy as np

import nelu

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
repo = here.parent.parent
urdf = repo / "robots" / "quadruped_minicheetah.urdf"
spec = repo / "examples" / "contacts" / "minicheetah_feet.yaml"

fd = nelu.compile(urdf, problem=spec, derivatives=True, batch=True, scalar="double")
nv = fd.nv
print(fd)
print("in: ", ", ".join(fd.inputs))
print("out:", ", ".join(fd.outputs))

# The slots by name: the motors' torques, the base's acceleration, each foot's force.
motors = [k for k, s in enumerate(fd.input_slots) if s["quantity"] == "joint_torque" and s["joint"] != "root_joint"]
feet = {s["contact"]: [k for k, t in enumerate(fd.output_slots) if t.get("contact") == s["contact"]]
        for s in fd.output_slots if s["quantity"] == "contact_force"}
print("feet:", {name: [fd.outputs[k] for k in slots] for name, slots in feet.items()})

# %% [markdown]
# ## Standing still: the torques that hold the crouch, from the derivatives
#
# qdd is affine in the torques, so one call of the derivatives at rest gives the motor torques
# that keep the robot still (qdd = 0: a least-squares solve with d qdd / d tau; the four legs hold
# the base in more ways than one, and the least-norm torques are one of them). Standing still, the
# feet carry the robot's weight and nothing sideways: the check of Newton's law below.

# %%
crouch = np.tile([0.0, 0.8, -1.6], 4)  # abad, hip, knee of each leg: the feet under the hips
rest = np.concatenate([[0, 0, 0.3, 0, 0, 0, 1], crouch])  # x y z, unit quaternion (x y z w), joints
out0, jac0 = fd.derivatives(rest, np.zeros(nv), np.zeros(fd.nin))
tau_hold = np.linalg.lstsq(jac0[:nv, 2 * nv:][:, motors], -out0[:nv], rcond=None)[0]
held = np.zeros(fd.nin)
held[motors] = tau_hold
out = fd(rest, np.zeros(nv), held)
weight = nelu.model(urdf, floating_base=True)["moving_mass"] * 9.81
total = sum(out[slots] for slots in feet.values())  # world axes: local_world_aligned
print(f"standing: motor torques {np.array2string(tau_hold, precision=2)} N m; |qdd| <= {np.abs(out[:nv]).max():.1e}; "
      f"the feet carry {np.array2string(total, precision=6)} N (the robot weighs {weight:.6f} N)")
assert np.abs(out[:nv]).max() < 1e-9 and np.abs(total - [0, 0, weight]).max() < 1e-9 * weight

# %% [markdown]
# ## The horizon: 50 knots of 20 ms
#
# The knots of a trajectory that the controller is improving: here a sway of the standing robot,
# the base rolling and bobbing and every joint swinging about the crouch, the motors' torques those
# that hold it plus a PD law toward it. q = [x y z qx qy qz qw, 12 joints], v = [the base's body
# twist wx wy wz vx vy vz, 12 joint rates].

# %%
knots, dt = 50, 0.02
t = dt * np.arange(knots)
phase = np.repeat([0.0, np.pi, np.pi, 0.0], 3)  # a trot's diagonal pairs
kp, kd = 40.0, 1.0                               # the PD law, N m / rad and N m s / rad

roll, roll_rate = 0.1 * np.sin(2 * np.pi * t), 0.2 * np.pi * np.cos(2 * np.pi * t)
height_rate = 0.08 * np.pi * np.cos(4 * np.pi * t)
Q = np.zeros((knots, fd.nq))
Q[:, 2] = 0.3 + 0.02 * np.sin(4 * np.pi * t)
Q[:, 3], Q[:, 6] = np.sin(roll / 2), np.cos(roll / 2)  # a roll about the base's x axis
Q[:, 7:] = crouch + 0.15 * np.sin(2 * np.pi * t[:, None] + phase)
V = np.zeros((knots, nv))
V[:, 0] = roll_rate                                      # body angular velocity
V[:, 4], V[:, 5] = np.sin(roll) * height_rate, np.cos(roll) * height_rate  # R^T (0, 0, dz/dt)
V[:, 6:] = 0.3 * np.pi * np.cos(2 * np.pi * t[:, None] + phase)
TAU = np.zeros((knots, fd.nin))  # the base's six stay zero: it is not actuated
TAU[:, motors] = tau_hold + kp * (crouch - Q[:, 7:]) - kd * V[:, 6:]

OUT = fd(Q, V, TAU)  # every knot's qdd and forces, one call of the batch form
vertical = sum(OUT[:, slots[2]] for slots in feet.values())  # fz of each foot (world axes)
print(f"{knots} knots: the feet carry {vertical.min():.1f} to {vertical.max():.1f} N vertically in all")

# %% [markdown]
# ## Every knot's derivatives in one call
#
# `fd.derivatives(Q, V, TAU)` with one knot per row calls `NAME_derivatives_batch` once (the knots
# in the lanes of the vector registers). jac[k] is d out / d[q-tangent, v, tau] at knot k: 30 rows
# (18 accelerations, 12 forces) by 54 columns (`fd.jac_columns`).

# %%
OUT_D, JAC = fd.derivatives(Q, V, TAU)
print(f"one batch call: out {OUT_D.shape}, jac {JAC.shape}; columns {fd.jac_columns[0]} ... {fd.jac_columns[-1]}")
error = np.abs(OUT_D - OUT).max() / np.abs(OUT).max()
print(f"outputs of the derivatives' batch against the value solver's: max relative error {error:.1e}")
assert error < 1e-12

# each knot alone gives the same values and Jacobian
single = [fd.derivatives(Q[k], V[k], TAU[k]) for k in range(knots)]
error = max(np.abs(OUT - np.stack([o for o, _ in single])).max() / np.abs(OUT).max(),
            np.abs(JAC - np.stack([j for _, j in single])).max() / np.abs(JAC).max())
print(f"batch outputs and Jacobians against {knots} single calls: max relative error {error:.1e}")
assert error < 1e-12

# the blocks a DDP step needs, by the columns' names
qdd_dq, qdd_dv, qdd_dtau = JAC[:, :nv, :nv], JAC[:, :nv, nv:2 * nv], JAC[:, :nv, 2 * nv:]
force_dtau = JAC[:, nv:, 2 * nv:]
print(f"d qdd / d q {qdd_dq.shape}, d qdd / d v {qdd_dv.shape}, d qdd / d tau {qdd_dtau.shape}, "
      f"d lambda / d tau {force_dtau.shape}")
# The base is not actuated: with the feet held, its torque columns still move qdd and the forces.
print(f"largest |d lambda / d tau_motor| over the horizon: {np.abs(force_dtau[:, :, 6:]).max():.2f} N / N m")

# %% [markdown]
# ## Time per knot: one batch call against a loop of single calls

# %%
def best(f, repeats=5):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


out_arrays = (np.empty_like(OUT_D), np.empty_like(JAC))
batch = best(lambda: fd.derivatives(Q, V, TAU, out=out_arrays, workers=1))
loop = best(lambda: [fd.derivatives(Q[k], V[k], TAU[k]) for k in range(knots)])
print(f"derivatives of {knots} knots: one batch call {1e6 * batch / knots:.1f} us per knot, "
      f"{knots} single calls from Python {1e6 * loop / knots:.1f} us per knot")

# %% [markdown]
# ## Plot: each foot's vertical force along the horizon

# %%
try:
    import matplotlib
except ImportError:
    print("matplotlib is not installed (Debian: python3-matplotlib): no plot")
else:
    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = dt * np.arange(knots)
    fig, ax = plt.subplots(figsize=(8, 4))
    for name, slots in feet.items():
        ax.plot(t, OUT[:, slots[2]], label=f"{name}.fz")
    ax.plot(t, vertical, "k--", label="sum")
    ax.axhline(weight, color="gray", lw=0.8, label="weight")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("force on the foot [N] (world z)")
    ax.legend(fontsize="small", ncol=3)
    ax.set_title("Mini Cheetah standing: contact forces along the horizon (nelu)")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 and "ipykernel" not in sys.modules else Path("contacts_horizon.png")
    fig.savefig(out, dpi=100)
    print(f"plot: {out}")
