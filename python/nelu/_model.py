"""nelu.model: the model summary of a URDF as data (`nelu model --json`)."""

from __future__ import annotations

import json
import os
from typing import Any

from . import _tool


def model(urdf: str | os.PathLike[str], *, floating_base: bool = False, snap: float | None = None, ignore_mimic: bool = False,
          keep_fixed: str | tuple[str, ...] | list[str] = (), nelu_exe: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The model nelu loads from a URDF, as ``nelu model --json`` prints it: ``robot``, ``nq``,
    ``nv``, ``moving_mass``, ``gravity``, and per body (``bodies``, in nelu's numbering) its link,
    parent, joint, type, axis, q and v indices, limits, mimic coupling, tree transform, mass, centre
    of mass and inertia about it (body frame, SI units); the merged fixed joints, mimic joints,
    ``--snap`` changes, warnings and the joints at which forward dynamics is singular. Bad input
    raises InputError with the CLI's message (file, line, element)."""
    if isinstance(keep_fixed, (str, os.PathLike)):  # one joint's name, not its letters
        keep_fixed = (os.fspath(keep_fixed),)
    args = ["model", "--json", _tool.path_arg(urdf), *_tool.load_args(floating_base=floating_base, snap=snap, ignore_mimic=ignore_mimic)]
    for joint in keep_fixed:
        args += ["--keep-fixed", str(joint)]
    return json.loads(_tool.run(_tool.find_nelu(nelu_exe), args).stdout)
