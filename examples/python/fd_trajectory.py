# %% [markdown]
# # The UR5e's forward dynamics along a trajectory, from Python
#
# Compile the UR5e's forward and inverse dynamics with nelu, let the arm fall under gravity with
# joint damping (forward dynamics at every step of a semi-implicit Euler integration), check the
# trajectory with inverse dynamics evaluated on all its states at once, and plot it.
#
# Run it as a script (`python examples/python/fd_trajectory.py [PLOT.png]`) or cell by cell
# (`# %%` cells, as Jupyter and VS Code read them). Needs the nelu package (README, "From Python")
# and, for the plot, matplotlib (Debian: python3-matplotlib).

# %%
import sys
from pathlib import Path

import numpy as np

import nelu

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
urdf = here.parent.parent / "robots" / "ur5e.urdf"

# No external wrenches: `in` is the joint torques alone (fd) or the accelerations alone (id).
no_wrenches = {"version": 1, "external_wrenches": "zero"}
fd = nelu.compile(urdf, problem={**no_wrenches, "problem": "fd"})
id_ = nelu.compile(urdf, problem={**no_wrenches, "problem": "id"})
print(fd)
print("in: ", ", ".join(fd.inputs))
print("out:", ", ".join(fd.outputs))

# %% [markdown]
# ## Falling with damping: tau = -d qd (d = 0.02 N m s), 1 ms steps for 1.5 s

# %%
dt, steps, damping = 1e-3, 1500, 0.02
q = np.array([0.0, -1.2, 1.0, -0.5, 0.5, 0.0])
qd = np.zeros(fd.nv)
Q, QD, QDD = (np.empty((steps, fd.nv)) for _ in range(3))
for k in range(steps):
    qdd = fd(q, qd, -damping * qd)  # one state: 1-D arrays in, 1-D array out
    Q[k], QD[k], QDD[k] = q, qd, qdd
    qd = qd + dt * qdd
    q = q + dt * qd
t = dt * np.arange(steps)
print(f"after {t[-1] + dt:.1f} s: q = {np.array2string(q, precision=3)}")

# %% [markdown]
# ## Inverse dynamics on every state at once gives back the damping torques

# %%
TAU = id_(Q, QD, QDD)  # (steps, nv) arrays: one state per row
error = np.abs(TAU - (-damping * QD)).max() / np.abs(TAU).max()
print(f"id(q, qd, fd(q, qd, tau)) against tau over {steps} states: max relative error {error:.1e}")
assert error < 1e-10

# %% [markdown]
# ## Plot

# %%
try:
    import matplotlib
except ImportError:
    print("matplotlib is not installed (Debian: python3-matplotlib): no plot")
else:
    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")  # a script writes the file; a notebook shows the figure
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    for j, name in enumerate(fd.q_names):
        axes[0].plot(t, Q[:, j], label=name)
        axes[1].plot(t, QDD[:, j], label=name)
    axes[0].set_ylabel("q [rad]")
    axes[1].set_ylabel("qdd [rad/s²]")
    axes[1].set_xlabel("t [s]")
    axes[0].legend(fontsize="small", ncol=3)
    axes[0].set_title("UR5e falling with joint damping (nelu forward dynamics)")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 and "ipykernel" not in sys.modules else Path("fd_trajectory.png")
    fig.savefig(out, dpi=100)
    print(f"plot: {out}")
