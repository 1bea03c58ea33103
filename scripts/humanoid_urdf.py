#!/usr/bin/env python3
"""Writes robots/humanoid_winter.urdf: a 24-DoF humanoid whose segment masses, lengths and
centres of mass follow D. A. Winter, "Biomechanics and Motor Control of Human Movement", 4th ed.
(Wiley 2009), Table 4.1 (segment mass / total mass, centre of mass / segment length, radius of
gyration / segment length about the centre of mass), for a 70 kg, 1.75 m body.

Segment inertias are those of solid cylinders with Winter's mass and length (radius from the
radius of gyration), principal axes along the segment: the triangle inequality holds. Each
multi-axis joint (hip, shoulder, ankle, waist, neck) is a chain of single-axis joints through
small intermediate links (0.3 kg motor housings).

The feet carry a six-axis force/torque sensor between ankle and sole plate (fixed joints
l_foot_ft / r_foot_ft, iDynTree <sensor> tags), the chest an accelerometer and a gyroscope.
Run from the repository root:  python3 scripts/humanoid_urdf.py > robots/humanoid_winter.urdf
"""
import math

M, H = 70.0, 1.75

def cyl(m, length, radius, axis):
    """Inertia tensor (ixx, iyy, izz) of a solid cylinder along `axis`."""
    a = m * radius * radius / 2
    t = m * (3 * radius * radius + length * length) / 12
    return {"x": (a, t, t), "y": (t, a, t), "z": (t, t, a)}[axis]

def f(v):
    return f"{v:.6g}" if v != 0 else "0"

links, joints, sensors = [], [], []

def link(name, m=0.3, com=(0, 0, 0), inertia=(1e-3, 1e-3, 1e-3)):
    links.append(f'''  <link name="{name}">
    <inertial>
      <origin xyz="{f(com[0])} {f(com[1])} {f(com[2])}" rpy="0 0 0"/>
      <mass value="{f(m)}"/>
      <inertia ixx="{f(inertia[0])}" ixy="0" ixz="0" iyy="{f(inertia[1])}" iyz="0" izz="{f(inertia[2])}"/>
    </inertial>
  </link>''')

def joint(name, parent, child, xyz=(0, 0, 0), axis=None, lo=-1.5, hi=1.5):
    kind = "fixed" if axis is None else "revolute"
    s = f'''  <joint name="{name}" type="{kind}">
    <parent link="{parent}"/>
    <child link="{child}"/>
    <origin xyz="{f(xyz[0])} {f(xyz[1])} {f(xyz[2])}" rpy="0 0 0"/>'''
    if axis is not None:
        s += f'''
    <axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>
    <limit lower="{lo}" upper="{hi}" effort="200" velocity="10"/>'''
    joints.append(s + "\n  </joint>")

def segment(frac_m, frac_l, com_frac, gyr_frac):
    """mass, length, centre-of-mass distance from the proximal joint, radius (cylinder)."""
    m, l = frac_m * M, frac_l * H
    # a solid cylinder has transverse radius of gyration sqrt(r^2/4 + l^2/12); solve for r
    k = gyr_frac * l
    r = math.sqrt(max(4 * (k * k - l * l / 12), (0.05 * l) ** 2))
    return m, l, com_frac * l, r

# Winter Table 4.1 (mass fraction, length fraction of height, com from proximal, gyration about com)
thigh = segment(0.100, 0.245, 0.433, 0.323)
shank = segment(0.0465, 0.246, 0.433, 0.302)
foot = segment(0.0145, 0.152, 0.50, 0.475)
upper_arm = segment(0.028, 0.186, 0.436, 0.322)
forearm = segment(0.022, 0.254, 0.682, 0.468)  # forearm and hand together
trunk = segment(0.497, 0.288, 0.50, 0.40)
head = segment(0.081, 0.13, 0.50, 0.495)
pelvis_m = 0.142 * M  # Winter's pelvis fraction of the trunk, taken from the trunk's share

link("pelvis", pelvis_m * 0.5, (0, 0, 0.02), cyl(pelvis_m * 0.5, 0.1, 0.15, "z"))
link("waist_link")
link("chest", trunk[0] * 0.7, (0, 0, trunk[2]), cyl(trunk[0] * 0.7, trunk[1], trunk[3], "z"))
joint("waist_yaw", "pelvis", "waist_link", (0, 0, 0.1), (0, 0, 1), -1.0, 1.0)
joint("waist_pitch", "waist_link", "chest", (0, 0, 0), (0, 1, 0), -0.5, 1.2)
link("neck_link")
link("head", head[0], (0, 0, head[2]), cyl(head[0], head[1], head[3], "z"))
joint("neck_yaw", "chest", "neck_link", (0, 0, trunk[1]), (0, 0, 1), -1.2, 1.2)
joint("neck_pitch", "neck_link", "head", (0, 0, 0.05), (0, 1, 0), -0.6, 0.6)

for side, sy in (("l", 1), ("r", -1)):
    # leg: hip yaw, roll, pitch; knee; ankle pitch, roll; F/T sensor; sole plate
    link(f"{side}_hip_yaw_link")
    link(f"{side}_hip_roll_link")
    link(f"{side}_thigh", thigh[0], (0, 0, -thigh[2]), cyl(thigh[0], thigh[1], thigh[3], "z"))
    link(f"{side}_shank", shank[0], (0, 0, -shank[2]), cyl(shank[0], shank[1], shank[3], "z"))
    link(f"{side}_ankle_pitch_link")
    link(f"{side}_ankle_roll_link", 0.5, (0, 0, -0.02), (5e-4, 5e-4, 5e-4))
    link(f"{side}_foot", foot[0], (0.04, 0, -0.05), cyl(foot[0], foot[1], 0.04, "x"))
    joint(f"{side}_hip_yaw", "pelvis", f"{side}_hip_yaw_link", (0, sy * 0.09, -0.05), (0, 0, 1), -0.8, 0.8)
    joint(f"{side}_hip_roll", f"{side}_hip_yaw_link", f"{side}_hip_roll_link", (0, 0, 0), (1, 0, 0), -0.5, 0.5)
    joint(f"{side}_hip_pitch", f"{side}_hip_roll_link", f"{side}_thigh", (0, 0, 0), (0, 1, 0), -1.8, 0.5)
    joint(f"{side}_knee", f"{side}_thigh", f"{side}_shank", (0, 0, -thigh[1]), (0, 1, 0), 0.0, 2.3)
    joint(f"{side}_ankle_pitch", f"{side}_shank", f"{side}_ankle_pitch_link", (0, 0, -shank[1]), (0, 1, 0), -0.8, 0.6)
    joint(f"{side}_ankle_roll", f"{side}_ankle_pitch_link", f"{side}_ankle_roll_link", (0, 0, 0), (1, 0, 0), -0.4, 0.4)
    joint(f"{side}_foot_ft", f"{side}_ankle_roll_link", f"{side}_foot", (0, 0, -0.03))
    sensors.append(f'''  <sensor name="{side}_foot_ft_sensor" type="force_torque">
    <parent joint="{side}_foot_ft"/>
    <force_torque>
      <frame>child</frame>
      <measure_direction>child_to_parent</measure_direction>
    </force_torque>
  </sensor>''')
    # arm: shoulder pitch, roll, yaw; elbow
    link(f"{side}_shoulder_pitch_link")
    link(f"{side}_shoulder_roll_link")
    link(f"{side}_upper_arm", upper_arm[0], (0, 0, -upper_arm[2]), cyl(upper_arm[0], upper_arm[1], upper_arm[3], "z"))
    link(f"{side}_forearm", forearm[0], (0, 0, -forearm[2]), cyl(forearm[0], forearm[1], forearm[3], "z"))
    joint(f"{side}_shoulder_pitch", "chest", f"{side}_shoulder_pitch_link", (0, sy * 0.2, trunk[1] - 0.05), (0, 1, 0), -3.0, 1.0)
    joint(f"{side}_shoulder_roll", f"{side}_shoulder_pitch_link", f"{side}_shoulder_roll_link", (0, 0, 0), (1, 0, 0), -0.2 if sy > 0 else -2.5, 2.5 if sy > 0 else 0.2)
    joint(f"{side}_shoulder_yaw", f"{side}_shoulder_roll_link", f"{side}_upper_arm", (0, 0, 0), (0, 0, 1), -1.5, 1.5)
    joint(f"{side}_elbow", f"{side}_upper_arm", f"{side}_forearm", (0, 0, -upper_arm[1]), (0, 1, 0), -2.5, 0.0)

sensors.append('''  <sensor name="chest_accelerometer" type="accelerometer">
    <parent link="chest"/>
    <origin xyz="0.08 0 0.3" rpy="0 0 0"/>
  </sensor>
  <sensor name="chest_gyroscope" type="gyroscope">
    <parent link="chest"/>
    <origin xyz="0.08 0 0.3" rpy="0 0 0"/>
  </sensor>''')

print('<?xml version="1.0"?>')
print("<!-- humanoid_winter.urdf: written by scripts/humanoid_urdf.py; see that script for the sources\n"
      "     (Winter 2009, Table 4.1 anthropometry for 70 kg, 1.75 m) and the modelling choices. -->")
print('<robot name="humanoid_winter">')
print("\n".join(links))
print("\n".join(joints))
print("\n".join(sensors))
print("</robot>")
