"""Forward kinematics of a URDF in NumPy, written from the URDF alone (independent of nelu): the
world pose of a link at a solver's q, a solver's tangent step q (+) d, and the motion of a point
along a state by finite differences. The contact tests check the compiled contact solvers against
it (a foot's classical acceleration, its velocity across an impact)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np


def rot_rpy(rpy) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def rot_axis(axis, angle: float) -> np.ndarray:
    """Rodrigues: the rotation by `angle` about the unit `axis`."""
    k = np.asarray(axis, dtype=float)
    k = k / np.linalg.norm(k)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def quat_rotation(quat) -> np.ndarray:
    """The rotation of a unit quaternion (x, y, z, w)."""
    x, y, z, w = quat
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quat_multiply(a, b) -> np.ndarray:
    """a * b for quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


class Kinematics:
    """A URDF's kinematic tree, with q laid out as a solver's (`q_names`: the joint of each q slot; a
    floating base is `root_joint`, x y z qx qy qz qw, its velocity the body twist wx wy wz vx vy vz)."""

    def __init__(self, urdf: str | Path, q_names, qd_names) -> None:
        root = ET.parse(urdf).getroot()
        self.joint_of_child: dict[str, dict] = {}
        for j in root.findall("joint"):
            origin = j.find("origin")
            axis = j.find("axis")
            self.joint_of_child[j.find("child").get("link")] = {
                "name": j.get("name"), "type": j.get("type"), "parent": j.find("parent").get("link"),
                "xyz": np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]),
                "rpy": np.array([float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]),
                "axis": np.array([float(v) for v in (axis.get("xyz") if axis is not None else "1 0 0").split()])}
        self.q_names, self.qd_names = list(q_names), list(qd_names)
        self.floating = "root_joint" in self.q_names
        self.q_index = {name: self.q_names.index(name) for name in self.q_names}
        self.nv = len(self.qd_names)

    def pose(self, q, link: str) -> tuple[np.ndarray, np.ndarray]:
        """(R, p): the orientation (link axes to world) and the origin of `link` in the world at q."""
        chain = []
        while link in self.joint_of_child:
            j = self.joint_of_child[link]
            chain.append(j)
            link = j["parent"]
        if self.floating:
            b = self.q_index["root_joint"]
            R, p = quat_rotation(q[b + 3:b + 7]), np.array(q[b:b + 3], dtype=float)
        else:
            R, p = np.eye(3), np.zeros(3)
        for j in reversed(chain):
            p = p + R @ j["xyz"]
            R = R @ rot_rpy(j["rpy"])
            if j["type"] in ("revolute", "continuous"):
                R = R @ rot_axis(j["axis"], q[self.q_index[j["name"]]])
            elif j["type"] == "prismatic":
                p = p + R @ (j["axis"] * q[self.q_index[j["name"]]])
        return R, p

    def step(self, q, d) -> np.ndarray:
        """q (+) d, nelu's tangent step (docs/derivatives.md): joints q + d; a floating base
        R(q (+) d) = R(q) exp([dw]x), p(q (+) d) = p + R(q) dv."""
        q = np.array(q, dtype=float)
        out = q.copy()
        v = 0
        for k, name in enumerate(self.qd_names):
            if name == "root_joint":
                continue
            out[self.q_index[name]] = q[self.q_index[name]] + d[k]
        if self.floating:
            b = self.q_index["root_joint"]
            v = self.qd_names.index("root_joint")
            dw, dv = np.asarray(d[v:v + 3], dtype=float), np.asarray(d[v + 3:v + 6], dtype=float)
            out[b:b + 3] = q[b:b + 3] + quat_rotation(q[b + 3:b + 7]) @ dv
            angle = np.linalg.norm(dw)
            half = np.concatenate([np.sin(angle / 2) * dw / angle, [np.cos(angle / 2)]]) if angle > 0 else np.array([0, 0, 0, 1.0])
            out[b + 3:b + 7] = quat_multiply(q[b + 3:b + 7], half)
        return out

    def base_twist_drift(self, qd) -> np.ndarray:
        """The tangent acceleration that the base's body twist adds to a motion of constant twist:
        [0, w x v, 0...] (p'' = R (vd + w x v) for a body twist [w; v])."""
        drift = np.zeros(self.nv)
        if self.floating:
            v = self.qd_names.index("root_joint")
            drift[v + 3:v + 6] = np.cross(qd[v:v + 3], qd[v + 3:v + 6])
        return drift

    def point_motion(self, q, qd, qdd, link: str, h: float = 1e-3) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(R, p, v, a) of `link`'s origin along the motion through q with velocity qd and
        acceleration qdd: its orientation and position, and its world velocity and classical
        acceleration by central differences of positions at q (+) (t qd + t^2/2 (qdd + drift)),
        a path with the state's velocity and acceleration to second order; Richardson-extrapolated
        from steps h and h/2 (divided by the largest velocity when it exceeds 1)."""
        acc = np.asarray(qdd, dtype=float) + self.base_twist_drift(qd)
        R, p = self.pose(q, link)
        h = h / max(1.0, float(np.abs(qd).max()))  # a step of the same angle whatever the speed

        def at(t: float) -> np.ndarray:
            return self.pose(self.step(q, t * np.asarray(qd, dtype=float) + 0.5 * t * t * acc), link)[1]

        def differences(s: float):
            up, down = at(s), at(-s)
            return (up - down) / (2 * s), (up - 2 * p + down) / (s * s)

        v1, a1 = differences(h)
        v2, a2 = differences(h / 2)
        return R, p, (4 * v2 - v1) / 3, (4 * a2 - a1) / 3
