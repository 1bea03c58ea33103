"""The exceptions and warnings of the nelu package (docs/python.md, "Errors")."""

from __future__ import annotations


class Error(Exception):
    """Base of every error the package raises.

    Errors from the ``nelu`` command line carry its exit code (``exit_code``), the command that
    was run (``command``) and what it printed (``stdout``, ``stderr``); the message is the CLI's own
    (the ``error: ...`` lines, naming the file, line, link, joint or sensor).
    """

    def __init__(self, message: str, *, exit_code: int | None = None, command: list[str] | None = None,
                 stdout: str = "", stderr: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.command = command
        self.stdout = stdout
        self.stderr = stderr


class IllPosedError(Error):
    """``nelu`` exit code 1: the problem is ill-posed, or a pivot cannot be made safe."""


class InputError(Error):
    """``nelu`` exit code 2: bad input (a URDF, a spec, an option), named by file and line."""


class InternalError(Error):
    """``nelu`` exit code 3 (including a failed verification or a failed ``check()``), or the
    command died."""


class ToolNotFoundError(Error, FileNotFoundError):
    """The ``nelu`` executable or the C++ compiler cannot be found."""


class BuildError(Error):
    """The C++ compiler failed to build the generated solver into a shared library."""


class ShapeError(Error, ValueError):
    """An array argument of a solver has the wrong number of dimensions or entries."""


class DTypeError(Error, TypeError):
    """An array argument of a solver is not float64 or float32, the arguments mix the two, or float32
    was given to a solver compiled without float entry points."""


class StatusError(Error, ArithmeticError):
    """A single-state call returned a status other than NELU_STATUS_OK (``status``: 1 for
    NELU_STATUS_SMALL_PIVOT, 2 for NELU_STATUS_NOT_FINITE, e.g. a NaN input). Batch calls do not
    raise it: they return the statuses (docs/python.md, "Status")."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class StatusWarning(RuntimeWarning):
    """Some states of a batch call returned a non-OK status (their rows are NaN) and the caller did
    not ask for the statuses (``return_status=True``)."""


class CompileWarning(UserWarning):
    """A warning printed by ``nelu compile`` (e.g. a URDF inertia that is not physical)."""


_BY_EXIT_CODE = {1: IllPosedError, 2: InputError, 3: InternalError}


def error_for_exit(exit_code: int, message: str, **details) -> Error:
    """The exception for a ``nelu`` exit code: 1 IllPosedError, 2 InputError, otherwise
    InternalError (3, or a signal)."""
    return _BY_EXIT_CODE.get(exit_code, InternalError)(message, exit_code=exit_code, **details)
