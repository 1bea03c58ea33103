"""A compiled solver, loaded with ctypes and called with NumPy arrays (docs/python.md)."""

from __future__ import annotations

import ctypes
import json
import operator
import os
import warnings
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from . import _threads, _tool
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
#: The dtypes' kinds converted to float64 or float32: booleans, integers, floats.
_REAL_KINDS = frozenset("biuf")
#: States per call of a batch entry point (its count is a C int).
_CHUNK = 1 << 30
#: Generated statements per state times states that make a thread worth starting: 0.5 to 4 ms of
#: work (the batch forms run 1 to 8 statements a nanosecond), where starting and joining a thread
#: costs tens of microseconds.
_STATEMENTS_PER_WORKER = 1 << 22
#: Pieces of a batch per thread.
_PIECES_PER_WORKER = 8
#: The pieces of a batch are multiples of this many states (a multiple of every lane width,
#: docs/batch.md): their blocks of lanes are those of one call for the whole batch.
_ALIGN = 64

#: The arrays a solver returns: float64 or float32, as called.
FloatArray = npt.NDArray[np.floating[Any]]
#: The statuses of a batch call: one C int per state.
StatusArray = npt.NDArray[np.intc]


def status_name(status: int) -> str:
    """NELU_STATUS_OK, NELU_STATUS_SMALL_PIVOT, NELU_STATUS_NOT_FINITE, or the number."""
    return STATUS_NAMES.get(int(status), f"status {int(status)}")


def slot_label(slot: dict[str, Any]) -> str:
    """A manifest slot as the generated header names it: "tau elbow_joint", "f^x wrist_3_link.fz",
    "qdd root_joint.vx", "ft_sensor.fx", "Lambda^-1[tool0.wx][2]"; a contact's force, impulse or
    Baumgarte reference by the contact's name, "lf.fz", "l_sole.nx", "lf.x"; a post-impact
    velocity "v+ root_joint.wx"."""
    component = f".{slot['component']}" if "component" in slot else ""
    if "matrix" in slot:
        column = f"[{slot['column']}]" if "column" in slot else ""
        return f"{slot['matrix']}[{slot.get('joint') or slot.get('link', '')}{component}]{column}"
    quantity = slot.get("quantity", "")
    prefix = {"joint_acceleration": "qdd", "joint_torque": "tau", "q_tangent": "q", "qd": "qd", "external_wrench": "f^x",
              "link_acceleration": "a", "joint_wrench": "f", "joint_velocity": "v+"}.get(quantity)
    if quantity == "measurement":
        return f"{slot['sensor']}{component}"
    if "contact" in slot:  # contact_force, contact_impulse, contact_reference: named like a sensor's readings
        return f"{slot['contact']}{component}"
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
    of ``inputs``. Other real arrays and sequences are converted as ``np.ascontiguousarray``
    converts them. ``out=`` writes into given arrays, ``workers=`` shares a batch among threads,
    and a solver pickles as its cache entry. See docs/python.md for shapes, dtypes, copies,
    statuses, threads and pickling.
    """

    def __init__(self, directory: str | os.PathLike[str], *, nelu_exe: str, urdf: str | None = None) -> None:
        self.directory = Path(directory)
        entry = json.loads((self.directory / "entry.json").read_text())
        self.manifest: dict[str, Any] = json.loads((self.directory / f"{entry['name']}.json").read_text())
        self.name: str = self.manifest["name"]
        self.library = self.directory / entry["library"]
        self.urdf = urdf if urdf is not None else entry["urdf"]
        self.log: str = (self.directory / "compile.log").read_text()
        self._urdf_arg: str | None = entry.get("urdf_arg")  # the URDF as the building call named it
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
        #: The work per state of each entry point (how many threads a batch is worth).
        self._statements = {"value": m["code"]["statements"], "derivatives": d["code"]["statements"] if d else 0}
        if self._entries[_DOUBLE].value is None and self._entries[_FLOAT].value is None:
            raise Error(f"{self.library}: has no entry point {self.name} or {self.name}_f")

    @property
    def problem(self) -> str:
        """The problem kind (id, fd, hybrid, osim, iwim, impulse) from the manifest."""
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

    def __reduce__(self):
        """Pickled as its cache entry (and the nelu executable and URDF it names): unpickling loads
        the entry's library again, in this process or another on the same machine."""
        return (_load, (os.path.abspath(self.directory), self._exe, self.urdf))

    # -- calls -----------------------------------------------------------------------------------

    @overload
    def __call__(self, q: npt.ArrayLike, qd: npt.ArrayLike, known: npt.ArrayLike | None = None, *,
                 out: FloatArray | None = None, workers: int | None = None, return_status: Literal[False] = False) -> FloatArray: ...

    @overload
    def __call__(self, q: npt.ArrayLike, qd: npt.ArrayLike, known: npt.ArrayLike | None = None, *,
                 out: FloatArray | None = None, workers: int | None = None,
                 return_status: Literal[True]) -> tuple[FloatArray, int | StatusArray]: ...

    def __call__(self, q: npt.ArrayLike, qd: npt.ArrayLike, known: npt.ArrayLike | None = None, *,
                 out: FloatArray | None = None, workers: int | None = None,
                 return_status: bool = False) -> FloatArray | tuple[FloatArray, int | StatusArray]:
        """The outputs at one state (1-D arguments: q (nq,), qd (nv,), known (nin,) -> (nout,)) or at
        many (2-D: (N, nq), (N, nv), (N, nin) -> (N, nout)).

        ``out``: an array of the result's shape and dtype (C-contiguous, writeable) to write the
        outputs into and return, instead of a new one. ``workers``: how many threads share the
        states of a 2-D call (default: as many as the machine has for a batch large enough to gain
        from them, else 1); the results do not depend on it.

        One state: a non-OK status raises StatusError. Many: the rows of states whose status is not
        OK are NaN and a StatusWarning says how many. ``return_status=True`` returns ``(out,
        status)`` instead (an int, or an (N,) array of int32 codes) and neither raises nor warns.
        """
        dtype, batched, args = self._arrays(q, qd, known)
        e = self._entry(dtype, "value")
        n = args[0].shape[0] if batched else None
        lead = () if n is None else (n,)
        outs = self._outputs([("out", out, lead + (self.nout,))], dtype, args)
        status = self._run(e.value, e.value_batch, n, args, outs, workers, self._statements["value"])
        return self._result(outs, status, return_status)

    @overload
    def derivatives(self, q: npt.ArrayLike, qd: npt.ArrayLike, known: npt.ArrayLike | None = None, *,
                    out: tuple[FloatArray, FloatArray] | None = None, workers: int | None = None,
                    return_status: Literal[False] = False) -> tuple[FloatArray, FloatArray]: ...

    @overload
    def derivatives(self, q: npt.ArrayLike, qd: npt.ArrayLike, known: npt.ArrayLike | None = None, *,
                    out: tuple[FloatArray, FloatArray] | None = None, workers: int | None = None,
                    return_status: Literal[True]) -> tuple[FloatArray, FloatArray, int | StatusArray]: ...

    def derivatives(self, q: npt.ArrayLike, qd: npt.ArrayLike, known: npt.ArrayLike | None = None, *,
                    out: tuple[FloatArray, FloatArray] | None = None, workers: int | None = None,
                    return_status: bool = False) -> tuple[FloatArray, FloatArray] | tuple[FloatArray, FloatArray, int | StatusArray]:
        """The outputs and their Jacobian with respect to [q-tangent, qd, in] (``jac_columns``), as
        ``NAME_derivatives`` computes them: ``(out, jac)`` with jac (nout, njac) for one state, or
        (N, nout), (N, nout, njac) for many. ``out=(out, jac)`` writes into given arrays;
        ``workers`` and statuses as for a call; ``return_status=True`` returns ``(out, jac, status)``."""
        if self.njac is None:
            raise Error(f"{self.name} was compiled without derivatives: nelu.compile(..., derivatives=True)")
        dtype, batched, args = self._arrays(q, qd, known)
        e = self._entry(dtype, "derivatives")
        n = args[0].shape[0] if batched else None
        lead = () if n is None else (n,)
        if out is not None and not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"{self.name}: derivatives' out must be a tuple of two arrays (out, jac), not {type(out).__name__}")
        given = (None, None) if out is None else out
        outs = self._outputs([("out[0]", given[0], lead + (self.nout,)), ("out[1]", given[1], lead + (self.nout, self.njac))],
                             dtype, args)
        status = self._run(e.derivatives, e.derivatives_batch, n, args, outs, workers, self._statements["derivatives"])
        return self._result(outs, status, return_status)

    def check(self, states: int | None = None) -> str:
        """``nelu check`` on the library this solver loaded: compares it with the reference
        algorithms on many states, double and float (and the Jacobian with derivatives). Returns
        the report; a failure raises InternalError with it."""
        if not self.library.is_file():  # (rebuild=True replaced the entry: this process keeps the old library loaded)
            raise Error(f"{self.name}: the library this solver loaded, {self.library}, is no longer in the cache (a compile with "
                        f"rebuild=True replaced its entry); this solver still computes, but check() can only check the new one: "
                        f"compile again and check that")
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

    def _arrays(self, q, qd, known) -> tuple[np.dtype, bool, list[np.ndarray]]:
        """(dtype, batched, [q, qd, known]) as C-contiguous, aligned arrays of one dtype, converted
        as np.ascontiguousarray(x, dtype) converts them (copies where needed), shapes checked:
        float32 arrays choose float32 (the float entry points), otherwise float64. Arrays and
        sequences that are not of real numbers (complex, object, strings, ...) are refused."""
        if type(q) is np.ndarray and type(qd) is np.ndarray and type(known) is np.ndarray:  # the common case, quickly
            dtype = q.dtype
            if (dtype in _SCALAR_OF and qd.dtype == dtype and known.dtype == dtype and q.ndim == qd.ndim == known.ndim == 1
                    and q.shape[0] == self.nq and qd.shape[0] == self.nv and known.shape[0] == self.nin
                    and q.flags.c_contiguous and qd.flags.c_contiguous and known.flags.c_contiguous
                    and q.flags.aligned and qd.flags.aligned and known.flags.aligned):
                return dtype, False, [q, qd, known]
        given = {"q": q, "qd": qd, "in": known}
        floats: dict[int, list[str]] = {}  # the float arrays given, by precision: they choose the entry points
        for label, a in given.items():
            if isinstance(a, np.ndarray):
                if a.dtype.kind not in _REAL_KINDS:
                    raise DTypeError(f"{self.name}: {label} has dtype {a.dtype}; the solvers take real numbers: float64 arrays "
                                     f"(double) or float32 arrays (float), to which integer, boolean and other float arrays "
                                     f"are converted")
                if a.dtype.kind == "f" and a.dtype.itemsize in (4, 8):
                    floats.setdefault(a.dtype.itemsize, []).append(f"{label} {a.dtype}")
        if len(floats) > 1:
            raise DTypeError(f"{self.name}: the arguments mix float64 and float32 ({', '.join(floats[8] + floats[4])}): "
                             f"give them one precision")
        dtype = _FLOAT if 4 in floats else _DOUBLE
        converted: list[np.ndarray] = []
        for label, a in given.items():
            if a is None:
                if self.nin:
                    raise ShapeError(f"{self.name} takes {self.nin} known inputs `in` ({_summary(self.inputs)}): "
                                     f"pass them as the third argument")
                a = np.zeros(np.shape(converted[0])[:-1] + (0,), dtype=dtype)
            elif not isinstance(a, np.ndarray):
                try:
                    a = np.asarray(a)
                except (TypeError, ValueError) as exc:
                    raise DTypeError(f"{self.name}: {label} is not an array of numbers ({exc})") from None
                if a.dtype.kind not in _REAL_KINDS:
                    raise DTypeError(f"{self.name}: {label} is not an array of numbers: as an array it has dtype {a.dtype}")
            converted.append(np.require(a, dtype=dtype, requirements=["C", "A"]))
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

    def _outputs(self, given: list[tuple[str, object, tuple[int, ...]]], dtype: np.dtype, args: list[np.ndarray]) -> list[np.ndarray]:
        """The output arrays: those given (label, array or None, shape the call gives), checked to be
        written in place, else new ones. An argument that shares memory with a given output is
        copied first (args is updated), as NumPy's ufuncs do."""
        outs = []
        for label, a, shape in given:
            if a is None:
                outs.append(np.empty(shape, dtype=dtype))
                continue
            if not isinstance(a, np.ndarray):
                raise TypeError(f"{self.name}: {label} must be a NumPy array, not {type(a).__name__}")
            if a.dtype != dtype:
                raise DTypeError(f"{self.name}: {label} has dtype {a.dtype}; this call computes {dtype} "
                                 f"(the {_SCALAR_OF[dtype]} entry points): give {label} that dtype")
            if a.shape != shape:
                raise ShapeError(f"{self.name}: {label} has shape {a.shape}; this call gives {shape}")
            if not (a.flags.c_contiguous and a.flags.aligned and a.flags.writeable):
                raise ShapeError(f"{self.name}: {label} must be C-contiguous, aligned and writeable (the solver writes its "
                                 f"rows in place); it is {'read-only' if not a.flags.writeable else 'not C-contiguous'}")
            for k, arg in enumerate(args):
                if np.may_share_memory(arg, a):
                    args[k] = arg.copy()
            for (other, _, _), b in zip(given, outs):  # two outputs written into one memory: one would be lost
                if b is not None and np.may_share_memory(a, b):
                    raise ShapeError(f"{self.name}: {label} and {other} share memory; each output needs its own array")
            outs.append(a)
        return outs

    # -- running -----------------------------------------------------------------------------------

    def _run(self, single, batch, n: int | None, args: list[np.ndarray], outs: list[np.ndarray], workers: int | None,
             statements: int) -> int | StatusArray:
        """Call the entry point once (n None: one state; returns its status), or for n states: the
        batch entry point when the library has it, else the single-state one per row, in threads
        sharing the rows (`workers`) (returns an (n,) int32 array of statuses). A failed state's rows
        of the outputs are NaN."""
        arrays = args + outs
        if n is None:
            status = int(single(*map(_pointer, arrays)))
            if status != STATUS_OK:
                for o in outs:
                    o.fill(np.nan)
            return status
        statuses = np.empty(n, dtype=np.intc)
        arrays.append(statuses)

        if batch is not None:
            def rows(start: int, stop: int) -> None:
                for first in range(start, stop, _CHUNK):
                    batch(min(_CHUNK, stop - first), *(_pointer(a[first:]) for a in arrays))
        else:
            def rows(start: int, stop: int) -> None:
                bases = [a.ctypes.data for a in arrays[:-1]]
                steps = [a.strides[0] for a in arrays[:-1]]
                for i in range(start, stop):
                    statuses[i] = single(*(b + i * r for b, r in zip(bases, steps)))

        count = self._workers(workers, n, batch is not None, statements)
        _threads.share(rows, _pieces(n, count), count)  # ctypes releases the GIL during each C call
        failed = statuses != STATUS_OK
        if failed.any():
            for o in outs:
                o[failed] = np.nan
        return statuses

    def _workers(self, workers: int | None, n: int, batch: bool, statements: int) -> int:
        """The threads of a call of n states: `workers` if given, else one per core when every core
        gets at least _STATEMENTS_PER_WORKER generated statements of the batch entry point to run
        (fewer cores for fewer states), and 1 for a loop over the single-state function from
        Python (which holds the GIL between calls)."""
        if workers is not None:
            try:
                count = operator.index(workers)
            except TypeError:
                raise TypeError(f"{self.name}: workers must be an integer (a count of threads), got {workers!r}") from None
            if count < 1:
                raise ValueError(f"{self.name}: workers must be at least 1, got {count}")
            return count
        if not batch:
            return 1
        return max(1, min(_cpus(), n * statements // _STATEMENTS_PER_WORKER))

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


def _load(directory: str, nelu_exe: str, urdf: str) -> Solver:
    """A pickled solver: its cache entry loaded again."""
    if not (Path(directory) / "entry.json").is_file():
        raise Error(f"{directory}: the cache entry of this pickled solver no longer exists (the cache was deleted or moved): "
                    f"nelu.compile the solver again")
    return Solver(directory, nelu_exe=nelu_exe, urdf=urdf)


def _cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _pieces(n: int, workers: int) -> list[tuple[int, int]]:
    """n rows in ranges that `workers` threads take in turn: about _PIECES_PER_WORKER per thread,
    so that a thread the system runs late leaves its share to the others; each but the last a
    multiple of _ALIGN states (whole blocks of lanes). One thread: one range."""
    if workers == 1:
        return [(0, n)]
    size = -(-n // (workers * _PIECES_PER_WORKER))
    size = max(_ALIGN, -(-size // _ALIGN) * _ALIGN)
    return [(start, min(start + size, n)) for start in range(0, n, size)]


_NO_BYTES = ctypes.c_char * 0


def _pointer(a: np.ndarray):
    """The address of an array's data as a ctypes argument: a zero-length ctypes array over a
    writable array's buffer (twice as fast as a.ctypes.data), else a.ctypes.data."""
    try:
        return _NO_BYTES.from_buffer(a)  # type: ignore[arg-type]  # an ndarray has the buffer protocol
    except TypeError:  # a read-only array
        return a.ctypes.data


def _summary(labels: tuple[str, ...]) -> str:
    """The first few slot labels, for messages."""
    return ", ".join(labels[:8]) + (f", ... ({len(labels)} in all; see .inputs)" if len(labels) > 8 else "")
