"""nelu.model: the model summary as data, against the URDF read independently."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

import pytest

import nelu
from conftest import FIXTURES, ROBOTS


def test_model_of_the_ur5e():
    m = nelu.model(ROBOTS / "ur5e.urdf")
    root = ET.parse(ROBOTS / "ur5e.urdf").getroot()
    masses = {link.get("name"): float(link.find("inertial/mass").get("value")) for link in root.iter("link")
              if link.find("inertial/mass") is not None}
    joints = {j.get("name"): j for j in root.iter("joint")}
    assert m["robot"] == root.get("name") and (m["nq"], m["nv"]) == (6, 6)
    assert not m["floating_base"]
    moving = [b for b in m["bodies"] if b["nv"] > 0]
    assert [b["joint"] for b in moving] == [j for j, e in joints.items() if e.get("type") != "fixed"]
    for b in moving:
        assert b["mass"] == masses[b["link"]]
        assert joints[b["joint"]].find("child").get("link") == b["link"]
        assert b["type"] == joints[b["joint"]].get("type")
    assert m["moving_mass"] == pytest.approx(sum(masses[b["link"]] for b in moving), rel=1e-15)
    assert [b["q_index"] for b in m["bodies"]] == list(range(6))


def test_model_floating_base_and_errors():
    m = nelu.model(ROBOTS / "quadruped_minicheetah.urdf", floating_base=True)
    assert m["floating_base"] and m["bodies"][0]["type"] == "floating" and m["bodies"][0]["nq"] == 7
    assert (m["nq"], m["nv"]) == (19, 18)
    with pytest.raises(nelu.InputError, match="negative_mass.urdf") as err:
        nelu.model(FIXTURES / "malformed" / "negative_mass.urdf")
    assert err.value.exit_code == 2
    warned = nelu.model(FIXTURES / "malformed" / "warn_non_unit_axis.urdf")
    assert warned["warnings"] and "axis" in warned["warnings"][0]


def test_model_snap_and_ignore_mimic(tmp_path):
    """--snap and --ignore-mimic reach `nelu model`: a URDF jittered by 1e-9 is snapped back, and a
    mimic joint becomes independent."""
    jittered = tmp_path / "jittered.urdf"
    subprocess.run([nelu.find_nelu(), "robot", "perturb", str(ROBOTS / "ur5e.urdf"), "--jitter", "1e-9", "--seed", "1",
                    "-o", str(jittered)], check=True)
    assert "snap" not in nelu.model(jittered)
    snapped = nelu.model(jittered, snap=1e-6)
    assert snapped["snap"]["tolerance"] == 1e-6 and snapped["snap"]["changes"]
    mimic = FIXTURES / "malformed" / "warn_mimic.urdf"
    coupled, independent = nelu.model(mimic), nelu.model(mimic, ignore_mimic=True)
    assert coupled["mimic"] and not coupled["ignored_mimic"]
    assert independent["ignored_mimic"] and not independent["mimic"]
    assert independent["independent_nv"] == coupled["independent_nv"] + len(coupled["mimic"])


def test_keep_fixed_takes_one_name_or_several():
    """keep_fixed="joint" is that joint (not its letters), as a list of one is."""
    urdf = ROBOTS / "panda_gaz2019.urdf"
    fixed = [j.get("name") for j in ET.parse(urdf).getroot().iter("joint") if j.get("type") == "fixed"]
    assert fixed, "the Panda has fixed joints"
    one = nelu.model(urdf, keep_fixed=fixed[0])
    assert one == nelu.model(urdf, keep_fixed=[fixed[0]])
    assert len(one["bodies"]) == len(nelu.model(urdf)["bodies"]) + 1
