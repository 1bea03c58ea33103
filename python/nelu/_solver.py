"""A compiled solver, loaded with ctypes and called with NumPy arrays (docs/python.md)."""

from __future__ import annotations

import ctypes
import json
import os
import warnings
from pathlib import Path

import numpy as np

from . import _tool
from ._errors import DTypeError, Error, ShapeError, StatusError, StatusWarning

#: Status codes of nelu/status.h.
STATUS_OK = 0
STATUS_SMALL_PIVOT = 1
STATUS_NOT_FINITE = 2
STATUS_NAMES = {STATUS_OK: "NELU_STATUS_OK", STATUS_SMALL_PIVOT: "NELU_STATUS_SMALL_PIVOT",
                STATUS_NOT_FINITE: "NELU_STATUS_NOT_FINITE"}
_STATUS_MEANING = {STATUS_SMALL_PIVOT: "a pivot fell below its safety threshold: the problem is singular or nearly so at this state",
                   STATUS_NOT_FINITE: "an output is not finite: an input is NaN or infinite, or so large that the computation overflowed"}

_DOUBLE = np.dtype(np.float64)
_FLOAT = np.dtype(np.float32)
_SCALAR_OF = {_DOUBLE: "double", _FLOAT: "float"}
#: States per call of a batch entry point (its count is a C int).
_CHUNK = 1 << 30


def status_name(status: int) -> str:
    """NELU_STATUS_OK, NELU_STATUS_SMALL_PIVOT, NELU_STATUS_NOT_FINITE, or the number."""
    return STATUS_NAMES.get(int(status), f"status {int(status)}")


def slot_label(slot: dict) -> str:
    """A manifest slot as the generated header names it: "tau elbow_joint", "f^x wrist_3_link.fz",
    "qdd root_joint.vx", "ft_sensor.fx", "Lambda^-1[tool0.wx][2]"."""
    component = f".{slot['component']}" if "component" in slot else ""
    if "matrix" in slot:
        column = f"[{slot['column']}]" if "column" in slot else ""
        return f"{slot['matrix']}[{slot.get('joint') or slot.get('link', '')}{component}]{column}"
    quantity = slot.get("quantity")
    prefix = {"joint_acceleration": "qdd", "joint_torque": "tau", "q_tangent": "q", "qd": "qd", "external_wrench": "f^x",
              "link_acceleration": "a", "joint_wrench": "f"}.get(quantity)
    if quantity == "measurement":
        return f"{slot['sensor']}{component}"
    where = slot.get("joint") or slot.get("link") or slot.get("sensor", "")
    return f"{prefix or quantity} {where}{component}"


class _Entries:
    """The entry points of one scalar type; None where the library has none."""

    def __init__(self, lib: ctypes.CDLL, base: str, suffix: str) -> None:
        self.value = self._entry(lib, base + suffix, 4, False)
        self.value_batch = self._entry(lib, base + suffix + "_batch", 5, True)
        self.derivatives = self._entry(lib, base + "_derivatives" + suffix, 5, False)
        self.derivatives_batch = self._entry(lib, base + "_derivatives" + suffix + "_batch", 6, True)

    @staticmethod
    def _entry(lib: ctypes.CDLL, symbol: str, pointers: int, batch: bool):
        try:
            f = lib[symbol]
        except AttributeError:
            return None
        f.restype = ctypes.c_int
        f.argtypes = ([ctypes.c_int] if batch else []) + [ctypes.c_void_p] * pointers
        return f


class Solver:
    """A generated solver built into a shared library and loaded (``nelu.compile`` returns one).

    ``solver(q, qd, known)`` evaluates it: 1-D arrays (one state) give a 1-D array, 2-D arrays
    (one state per row) a 2-D array; float64 arrays call the double entry points, float32 arrays
    the float ones (``NAME_f``). ``known`` is the solver's ``in``: the known quantities in the order
    of ``inputs``. See docs/python.md for shapes, dtypes, copies and statuses.
    """

    def __init__(self, directory: str | os.PathLike, *, nelu_exe: str, urdf: str | None = None) -> None:
        self.directory = Path(directory)
        entry = json.loads((self.directory / "entry.json").read_text())
        self.manifest: dict = json.loads((self.directory / f"{entry['name']}.json").read_text())
        self.name: str = self.manifest["name"]
        self.library = self.directory / entry["library"]
        self.urdf = urdf if urdf is not None else entry["urdf"]
        self.log: str = (self.directory / "compile.log").read_text()
        self._exe = nelu_exe
        self._spec = self.directory / "spec.yaml" if entry.get("spec") else None
        m = self.manifest
        self.nq: int = m["nq"]
        self.nv: int = m["nv"]
        self.nin: int = len(m["in"])
        self.nout: int = len(m["out"])
        self.q_names: tuple[str, ...] = tuple(m["q"])
        self.qd_names: tuple[str, ...] = tuple(m["qd"])
        self.input_slots: tuple[dict, ...] = tuple(m["in"])
        self.output_slots: tuple[dict, ...] = tuple(m["out"])
        self.inputs: tuple[str, ...] = tuple(slot_label(s) for s in m["in"])
        self.outputs: tuple[str, ...] = tuple(slot_label(s) for s in m["out"])
        d = m.get("derivatives")
        self.njac: int | None = d["jac_cols"] if d else None
        self.jac_columns: tuple[str, ...] | None = tuple(slot_label(c) for c in d["jac_columns"]) if d else None
        self.scalars: tuple[str, ...] = tuple(m.get("scalars", ["double"]))
        self._lib = ctypes.CDLL(str(self.library), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self._entries = {_DOUBLE: _Entries(self._lib, self.name, ""), _FLOAT: _Entries(self._lib, self.name, "_f")}
        if self._entries[_DOUBLE].value is None and self._entries[_FLOAT].value is None:
            raise Error(f"{self.library}: has no entry point {self.name} or {self.name}_f")

    @property
    def problem(self) -> str:
        """The problem kind (id, fd, hybrid, osim, iwim) from the manifest."""
        return self.manifest["problem"]["kind"]

    @property
    def floating_base(self) -> bool:
        return bool(self.manifest["floating_base"])

    @property
    def has_batch(self) -> bool:
        """Whether the library has the batch entry points (``nelu compile --batch``); without them,
        2-D calls loop over the single-state function."""
        return self._entries[_DOUBLE].value_batch is not None or self._entries[_FLOAT].value_batch is not None

    def __repr__(self) -> str:
        extra = (", derivatives" if self.njac is not None else "") + (", batch" if self.has_batch else "")
        return (f"<nelu.Solver {self.name}: {self.problem} of {self.manifest['robot']['name']}, nq {self.nq}, nv {self.nv}, "
                f"in {self.nin}, out {self.nout}{extra}>")

    # -- calls -----------------------------------------------------------------------------------

    def __call__(self, q, qd, known=None, *, return_status: bool = False):
        """The outputs at one state (1-D arguments: q (nq,), qd (nv,), known (nin,) -> (nout,)) or at
        many (2-D: (N, nq), (N, nv), (N, nin) -> (N, nout)).

        One state: a non-OK status raises StatusError. Many: the rows of states whose status is not
        OK are NaN and a StatusWarning says how many. ``return_status=True`` returns ``(out,
        status)`` instead (an int, or an (N,) array of int32 codes) and neither raises nor warns.
        """
        dtype, batched, args = self._arrays(q, qd, known)
        e = self._entry(dtype, "value")
        n = args[0].shape[0] if batched else None
        out = _nan((self.nout,) if n is None else (n, self.nout), dtype)
        status = self._run(e.value, e.value_batch, n, args, [out])
        return self._result([out], status, return_status)

    def derivatives(self, q, qd, known=None, *, return_status: bool = False):
        """The outputs and their Jacobian with respect to [q-tangent, qd, in] (``jac_columns``), as
        ``NAME_derivatives`` computes them: ``(out, jac)`` with jac (nout, njac) for one state, or
        (N, nout), (N, nout, njac) for many. Statuses as for a call; ``return_status=True`` returns
        ``(out, jac, status)``."""
        if self.njac is None:
            raise Error(f"{self.name} was compiled without derivatives: nelu.compile(..., derivatives=True)")
        dtype, batched, args = self._arrays(q, qd, known)
        e = self._entry(dtype, "derivatives")
        n = args[0].shape[0] if batched else None
        lead = () if n is None else (n,)
        out = _nan(lead + (self.nout,), dtype)
        jac = _nan(lead + (self.nout, self.njac), dtype)
        status = self._run(e.derivatives, e.derivatives_batch, n, args, [out, jac])
        return self._result([out, jac], status, return_status)

    def check(self, states: int | None = None) -> str:
        """``nelu check`` on the library this solver loaded: compares it with the reference
        algorithms on many states, double and float (and the Jacobian with derivatives). Returns
        the report; a failure raises InternalError with it."""
        args = ["check", str(self.directory / "robot.urdf"), str(self.directory / f"{self.name}.json"), "--library", str(self.library)]
        if self._spec is not None:
            args += ["--problem", str(self._spec)]
        if states is not None:
            args += ["--states", str(int(states))]
        return _tool.run(self._exe, args).stdout

    # -- arguments ---------------------------------------------------------------------------------

    def _entry(self, dtype: np.dtype, kind: str) -> _Entries:
        e = self._entries[dtype]
        if (e.value if kind == "value" else e.derivatives) is None:
            scalar = _SCALAR_OF[dtype]
            raise DTypeError(f"{self.name} has no {scalar} entry point{' of its derivatives' if kind == 'derivatives' else ''}: "
                             f"it was compiled with scalar={'double' if scalar == 'float' else 'float'}; "
                             f"call it with {'float64' if scalar == 'float' else 'float32'} arrays or compile with scalar='both'")
        return e

    def _arrays(self, q, qd, known):
        """(dtype, batched, [q, qd, known]) as C-contiguous, aligned arrays of one dtype (copies
        where needed), with their shapes checked."""
        if type(q) is np.ndarray and type(qd) is np.ndarray and type(known) is np.ndarray:  # the common case, quickly
            dtype = q.dtype
            if (dtype in _SCALAR_OF and qd.dtype == dtype and known.dtype == dtype and q.ndim == qd.ndim == known.ndim == 1
                    and q.shape[0] == self.nq and qd.shape[0] == self.nv and known.shape[0] == self.nin
                    and q.flags.c_contiguous and qd.flags.c_contiguous and known.flags.c_contiguous
                    and q.flags.aligned and qd.flags.aligned and known.flags.aligned):
                return dtype, False, [q, qd, known]
        given = {"q": q, "qd": qd, "in": known}
        arrays = [a for a in given.values() if isinstance(a, np.ndarray)]
        for label, a in given.items():
            if isinstance(a, np.ndarray) and a.dtype not in _SCALAR_OF:
                raise DTypeError(f"{self.name}: {label} has dtype {a.dtype}; the solvers take float64 arrays (double) "
                                 f"or float32 arrays (float)")
        dtypes = {a.dtype for a in arrays}
        if len(dtypes) > 1:
            mixed = ", ".join(f"{k} {a.dtype}" for k, a in given.items() if isinstance(a, np.ndarray))
            raise DTypeError(f"{self.name}: the arguments mix float64 and float32 ({mixed}): give them one dtype")
        dtype = dtypes.pop() if dtypes else _DOUBLE
        converted = []
        for label, a in given.items():
            if a is None:
                if self.nin:
                    raise ShapeError(f"{self.name} takes {self.nin} known inputs `in` ({_summary(self.inputs)}): "
                                     f"pass them as the third argument")
                a = np.zeros(np.shape(converted[0])[:-1] + (0,), dtype=dtype)
            try:
                converted.append(np.require(a, dtype=dtype, requirements=["C", "A"]))
            except (TypeError, ValueError) as exc:
                raise DTypeError(f"{self.name}: {label} is not an array of numbers ({exc})") from None
        self._check_shapes(converted)
        return dtype, converted[0].ndim == 2, converted

    def _check_shapes(self, arrays: list[np.ndarray]) -> None:
        widths = (("q", self.nq), ("qd", self.nv), ("in", self.nin))

        def shapes() -> str:
            return ", ".join(f"{label} {a.shape}" for (label, _), a in zip(widths, arrays))

        ndims = {a.ndim for a in arrays}
        if ndims not in ({1}, {2}):
            raise ShapeError(f"{self.name}: q, qd and in must all be 1-D (one state) or all 2-D (one state per row); got {shapes()}")
        for (label, width), a in zip(widths, arrays):
            if a.shape[-1] != width:
                what = f" ({_summary(self.inputs)})" if label == "in" else ""
                raise ShapeError(f"{self.name}: {label} has {a.shape[-1]} entries per state, the solver takes {width}{what}; got {shapes()}")
        if ndims == {2} and len({a.shape[0] for a in arrays}) != 1:
            raise ShapeError(f"{self.name}: q, qd and in must have one row per state, as many rows each; got {shapes()}")

    # -- running -----------------------------------------------------------------------------------

    @staticmethod
    def _run(single, batch, n: int | None, args: list[np.ndarray], outs: list[np.ndarray]):
        """Call the entry point once (n None: one state; returns its status), or for n states: the
        batch entry point when the library has it, else the single-state one per row (returns an
        (n,) int32 array of statuses). Outputs of a failed state are left as they were (NaN)."""
        arrays = args + outs
        if n is None:
            return int(single(*map(_pointer, arrays)))
        status = np.zeros(n, dtype=np.intc)
        if batch is not None:
            for start in range(0, n, _CHUNK):
                count = min(_CHUNK, n - start)
                batch(count, *(_pointer(a[start:]) for a in arrays), _pointer(status[start:]))
            return status
        bases = [a.ctypes.data for a in arrays]
        rows = [a.strides[0] for a in arrays]
        for i in range(n):
            status[i] = single(*(b + i * r for b, r in zip(bases, rows)))
        return status

    def _result(self, outs: list[np.ndarray], status, return_status: bool):
        if return_status:
            return (*outs, status)
        if isinstance(status, int):
            if status != STATUS_OK:
                raise StatusError(f"{self.name}: {status_name(status)}: {_STATUS_MEANING.get(status, 'an unknown status')}",
                                  status=status)
        else:
            failed = np.flatnonzero(status != STATUS_OK)
            if failed.size:
                first = int(failed[0])
                warnings.warn(StatusWarning(
                    f"{self.name}: {failed.size} of {status.size} states returned a non-OK status (the first: row {first}, "
                    f"{status_name(status[first])}); their rows are NaN. return_status=True returns the statuses"), stacklevel=3)
        return outs[0] if len(outs) == 1 else tuple(outs)


_NO_BYTES = ctypes.c_char * 0


def _pointer(a: np.ndarray):
    """The address of an array's data as a ctypes argument: a zero-length ctypes array over a
    writable array's buffer (twice as fast as a.ctypes.data), else a.ctypes.data."""
    try:
        return _NO_BYTES.from_buffer(a)
    except TypeError:  # a read-only array
        return a.ctypes.data


def _nan(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of NaN (what a failed state's outputs stay)."""
    a = np.empty(shape, dtype=dtype)
    a.fill(np.nan)
    return a


def _summary(labels: tuple[str, ...]) -> str:
    """The first few slot labels, for messages."""
    return ", ".join(labels[:8]) + (f", ... ({len(labels)} in all; see .inputs)" if len(labels) > 8 else "")
