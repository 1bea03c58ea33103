"""nelu from Python: compile a robot's dynamics into a solver and call it with NumPy arrays.

    import nelu
    fd = nelu.compile("robots/ur5e.urdf", problem="fd")
    qdd = fd(q, qd, known)              # known: the solver's `in`, in the order of fd.inputs
    nelu.model("robots/ur5e.urdf")      # the model summary as data

The package runs the ``nelu`` command line (found as ``find_nelu`` says), builds the generated C++
with the system compiler and loads it with ctypes. See docs/python.md.
"""

from ._build import cache_dir, compile
from ._errors import (BuildError, CompileWarning, DTypeError, Error, IllPosedError, InputError, InternalError, ShapeError,
                      StatusError, StatusWarning, ToolNotFoundError)
from ._model import model
from ._solver import (STATUS_NOT_FINITE, STATUS_OK, STATUS_SMALL_PIVOT, Solver, slot_label, status_name)
from ._tool import find_nelu
from ._version import __version__

__all__ = [
    "compile", "model", "Solver", "cache_dir", "find_nelu", "slot_label", "status_name",
    "STATUS_OK", "STATUS_SMALL_PIVOT", "STATUS_NOT_FINITE",
    "Error", "IllPosedError", "InputError", "InternalError", "ToolNotFoundError", "BuildError", "ShapeError", "DTypeError",
    "StatusError", "StatusWarning", "CompileWarning",
]
