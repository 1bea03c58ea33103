"""The package as NumPy users expect it: arguments converted as np.ascontiguousarray(x, dtype)
converts them, `out=` arrays written in place, batches spread over threads (`workers=`), solvers
that pickle, type annotations (py.typed) and one version."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect
import multiprocessing
import os
import pickle
import re
import shutil
import subprocess
import sys
import threading
import tracemalloc
import typing
from pathlib import Path

import numpy as np
import pytest

import nelu
from conftest import REPO, TEST_FLAGS, bitwise_equal, random_states


@pytest.fixture(scope="module")
def fd(build):
    return build("ur5e.urdf", problem="fd")


def _as(dtype, *arrays):
    """The arrays as np.ascontiguousarray converts them: the reference for what a call receives."""
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def test_real_arrays_of_any_dtype_and_byte_order_are_converted(fd):
    """Arrays in non-native byte order, integer, boolean and other float arrays are converted as
    np.ascontiguousarray(x, dtype=np.float64) converts them (float32 when a float32 array chooses
    the float solver); the call equals the call on the converted arrays, bit for bit."""
    Q, QD, IN = random_states(fd, np.random.default_rng(31), 5)
    for dtype in (np.float64, np.float32):
        swapped = [a.astype(np.dtype(dtype).newbyteorder()) for a in (Q, QD, IN)]
        assert all(not a.dtype.isnative for a in swapped)
        expected = fd(*_as(dtype, Q, QD, IN))
        assert expected.dtype == dtype
        assert bitwise_equal(fd(*swapped), expected)  # many states
        assert bitwise_equal(fd(*(a[2] for a in swapped)), expected[2])  # one state
    ints = np.array([[0, 1, -1, 2, 0, 3], [3, 2, 1, 0, -1, -2]], dtype=np.int64)
    for q in (ints, ints.astype(np.int32), ints.astype(np.uint8) % 3, ints > 0, ints.astype(np.float16)):
        assert bitwise_equal(fd(q, QD[:2], IN[:2]), fd(*_as(np.float64, q, QD[:2], IN[:2])))
        assert bitwise_equal(fd(q[0], QD[0], IN[0]), fd(*_as(np.float64, q[0], QD[0], IN[0])))
        assert bitwise_equal(fd(q, QD[:2], IN[:2]), fd(q.tolist(), QD[:2], IN[:2]))  # as a list of its values
        # beside float32 arrays, to float32
        f32 = fd(q, QD[:2].astype(np.float32), IN[:2].astype(np.float32))
        assert bitwise_equal(f32, fd(*_as(np.float32, q, QD[:2], IN[:2])))
    known = np.zeros(fd.nin, dtype=np.int64)  # e.g. zero torques as integers
    assert bitwise_equal(fd(Q[0], QD[0], known), fd(Q[0], QD[0], known.astype(np.float64)))


def test_what_cannot_be_converted_is_refused(fd):
    q, qd, known = (a[0] for a in random_states(fd, np.random.default_rng(37), 1))
    for bad in (q.astype(np.complex128), q.astype(object), q.astype(str), np.zeros(6, dtype="datetime64[s]")):
        with pytest.raises(nelu.DTypeError, match=re.escape(f"ur5e_fd: q has dtype {bad.dtype}")):
            fd(bad, qd, known)
    with pytest.raises(nelu.DTypeError, match=r"ur5e_fd: in is not an array of numbers"):
        fd(q, qd, [1j] * fd.nin)
    with pytest.raises(nelu.DTypeError, match="mix float64 and float32"):  # '>f8' is float64 too
        fd(q.astype(">f8"), qd.astype(np.float32), known)


def test_out_is_written_in_place_and_returned(build):
    """out= gets the values the allocating call returns (a failed state's rows NaN over whatever
    the array held), is returned itself, and takes the place of an argument it overlaps."""
    fd = build("ur5e.urdf", problem="fd", derivatives=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(41), 9)
    QD[4, 0] = np.nan
    for dtype in (np.float64, np.float32):
        args = [a.astype(dtype) for a in (Q, QD, IN)]
        expected, status = fd(*args, return_status=True)
        out = np.full((9, fd.nout), 7.0, dtype=dtype)
        got, got_status = fd(*args, out=out, return_status=True)
        assert got is out and bitwise_equal(out, expected) and got_status.tolist() == status.tolist()
        one = np.full(fd.nout, 7.0, dtype=dtype)
        assert fd(*(a[0] for a in args), out=one) is one and bitwise_equal(one, expected[0])
        one.fill(7.0)
        assert fd(*(a[4] for a in args), out=one, return_status=True)[1] == nelu.STATUS_NOT_FINITE
        assert np.isnan(one).all()
        o, j, s = fd.derivatives(*args, return_status=True)
        o2, j2 = np.full_like(o, 7.0), np.full_like(j, 7.0)
        got = fd.derivatives(*args, out=(o2, j2), return_status=True)
        assert got[0] is o2 and got[1] is j2 and bitwise_equal(o2, o) and bitwise_equal(j2, j)
    # out overlapping an argument (UR5e's fd: nq = nout): the argument's values are used
    assert fd.nq == fd.nout
    expected = fd(Q, QD, IN, return_status=True)[0]
    inplace = Q.copy()
    assert fd(inplace, QD, IN, out=inplace, return_status=True)[0] is inplace
    assert bitwise_equal(inplace, expected)


def test_out_that_cannot_be_written_in_place_is_refused(build):
    fd = build("ur5e.urdf", problem="fd", derivatives=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(43), 3)
    cases = [
        (np.empty((3, 7)), nelu.ShapeError, r"ur5e_fd: out has shape \(3, 7\); this call gives \(3, 6\)"),
        (np.empty(6), nelu.ShapeError, r"out has shape \(6,\); this call gives \(3, 6\)"),
        (np.empty((3, 6), dtype=np.float32), nelu.DTypeError, r"out has dtype float32; this call computes float64"),
        (np.empty((3, 6), dtype=">f8"), nelu.DTypeError, r"out has dtype >f8"),
        (np.empty((6, 3)).T, nelu.ShapeError, r"out must be C-contiguous.*not C-contiguous"),
        (np.empty((3, 6)).copy(order="C"), None, None),
    ]
    readonly = np.empty((3, 6))
    readonly.setflags(write=False)
    cases.append((readonly, nelu.ShapeError, r"read-only"))
    for out, error, message in cases:
        if error is None:
            fd(Q, QD, IN, out=out)
            continue
        with pytest.raises(error, match=message):
            fd(Q, QD, IN, out=out)
    with pytest.raises(TypeError, match="out must be a NumPy array, not list"):
        fd(Q, QD, IN, out=[[0.0] * 6] * 3)
    with pytest.raises(TypeError, match=r"out must be a tuple of two arrays \(out, jac\)"):
        fd.derivatives(Q, QD, IN, out=np.empty((3, 6)))
    with pytest.raises(nelu.ShapeError, match=r"out\[1\] has shape \(3, 6\); this call gives \(3, 6, 54\)"):
        fd.derivatives(Q, QD, IN, out=(np.empty((3, 6)), np.empty((3, 6))))


def test_out_allocates_nothing_of_its_size(build):
    """With out= a call allocates a small part of the outputs' bytes (the statuses, 4 bytes a
    state); without it at least the outputs' (NumPy reports its allocations to tracemalloc)."""
    fd = build("ur5e.urdf", problem="fd", batch=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(47), 20000)
    out = np.empty((20000, fd.nout))

    def peak(**kwargs) -> int:
        tracemalloc.start()
        try:
            fd(Q, QD, IN, **kwargs)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peak() >= out.nbytes
    assert peak(out=out) < out.nbytes / 4


class _Recorder:
    """Stands in for a batch entry point: records the thread and the count of each call. The first
    call of each thread waits until `threads` threads have made one (so that a thread that never
    calls fails the test)."""

    def __init__(self, entry, threads: int) -> None:
        self.entry, self.calls, self.lock = entry, [], threading.Lock()
        self.barrier = threading.Barrier(threads, timeout=60)

    def __call__(self, n, *pointers):
        with self.lock:
            first = threading.get_ident() not in {thread for thread, _ in self.calls}
            self.calls.append((threading.get_ident(), n))
        if first:
            self.barrier.wait()
        return self.entry(n, *pointers)

    def threads(self) -> int:
        return len({thread for thread, _ in self.calls})

    def counts(self) -> list[int]:
        return [count for _, count in self.calls]


def test_workers_share_a_batch_with_identical_results(build):
    """workers=k shares a batch among k threads, and every row and status is what workers=1 gives,
    bit for bit, in double and float, for the values and the derivatives, with failing states."""
    fd = build("ur5e.urdf", problem="fd", derivatives=True, batch=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(53), 1003)
    QD[[5, 700], 0] = np.nan
    for dtype in (np.float64, np.float32):
        args = [a.astype(dtype) for a in (Q, QD, IN)]
        one = fd(*args, workers=1, return_status=True)
        one_d = fd.derivatives(*args, workers=1, return_status=True)
        assert one[1][[5, 700]].tolist() == [nelu.STATUS_NOT_FINITE] * 2
        for workers in (2, 3, 16):
            many = fd(*args, workers=workers, return_status=True)
            assert all(bitwise_equal(a, b) for a, b in zip(one, many))
            many_d = fd.derivatives(*args, workers=workers, return_status=True)
            assert all(bitwise_equal(a, b) for a, b in zip(one_d, many_d))


def test_workers_call_the_batch_entry_point_from_threads(build):
    """workers=2: both threads call the batch entry point, on pieces of whole blocks of 64 states
    (but the last), more pieces than threads (a thread that starts late leaves its share to the
    other), every state once. The default: one thread for a small batch, every core for a large one."""
    fd = build("ur5e.urdf", problem="fd", batch=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(67), 1003)
    entries = fd._entries[np.dtype(np.float64)]
    entry = entries.value_batch
    try:
        entries.value_batch = recorder = _Recorder(entry, 2)
        fd(Q, QD, IN, workers=2)
        assert recorder.threads() == 2 and len(recorder.calls) > 2
        assert sum(recorder.counts()) == 1003 and sum(count % 64 != 0 for count in recorder.counts()) == 1
        entries.value_batch = recorder = _Recorder(entry, 1)
        fd(Q[:10], QD[:10], IN[:10])
        assert recorder.counts() == [10]
        cores = len(os.sched_getaffinity(0))
        entries.value_batch = recorder = _Recorder(entry, cores)
        big = [np.repeat(a, 100, axis=0) for a in (Q, QD, IN)]
        fd(*big)
        assert recorder.threads() == cores and sum(recorder.counts()) == 100300
    finally:
        entries.value_batch = entry


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_workers_in_a_forked_child(build):
    """A process forked after the helper threads started has none of them: it starts its own, and
    its threaded calls give the parent's values."""
    fd = build("ur5e.urdf", problem="fd", batch=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(71), 1000)
    expected = fd(Q, QD, IN, workers=2)  # the parent's helper threads run
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got, threads = pool.apply_async(_call_and_list_threads, (fd, Q, QD, IN)).get(timeout=120)
    assert bitwise_equal(got, expected)
    assert "nelu-worker-0" in threads


def _call_and_list_threads(fd, Q, QD, IN):
    """In a pool's process: a call with workers=2, and the names of the process's threads after it."""
    return fd(Q, QD, IN, workers=2), [t.name for t in threading.enumerate()]


def test_workers_without_batch_entry_points(build):
    """A library without NAME_batch: the loop over rows shared among threads, the same results."""
    fd = build("ur5e.urdf", problem="fd")
    assert not fd.has_batch
    Q, QD, IN = random_states(fd, np.random.default_rng(59), 300)
    IN[100, 0] = np.inf
    one = fd(Q, QD, IN, workers=1, return_status=True)
    three = fd(Q, QD, IN, workers=3, return_status=True)
    assert all(bitwise_equal(a, b) for a, b in zip(one, three))
    for bad, error in ((0, ValueError), (-2, ValueError), (1.5, TypeError), ("2", TypeError)):
        with pytest.raises(error):
            fd(Q, QD, IN, workers=bad)


def test_solver_pickles_as_its_cache_entry(build, tmp_path):
    """A solver pickles and unpickles (here and in processes of a pool, which pickle the solver to
    call it) into one that loads the same library and gives the same values, bit for bit; the
    pickle of a solver whose cache entry is gone fails saying so."""
    fd = build("ur5e.urdf", problem="fd", derivatives=True)
    Q, QD, IN = random_states(fd, np.random.default_rng(61), 6)
    again = pickle.loads(pickle.dumps(fd))
    assert again is not fd and again.library == fd.library and again.manifest == fd.manifest
    assert bitwise_equal(again(Q, QD, IN), fd(Q, QD, IN))
    assert all(bitwise_equal(a, b) for a, b in zip(again.derivatives(Q, QD, IN), fd.derivatives(Q, QD, IN)))
    with multiprocessing.get_context("spawn").Pool(2) as pool:  # fresh interpreters: nothing inherited
        rows = pool.starmap(fd, [(Q[:3], QD[:3], IN[:3]), (Q[3:], QD[3:], IN[3:])])
        jacobians = pool.starmap(fd.derivatives, [(Q[:3], QD[:3], IN[:3]), (Q[3:], QD[3:], IN[3:])])
    assert bitwise_equal(np.vstack(rows), fd(Q, QD, IN))
    assert bitwise_equal(np.concatenate([j for _, j in jacobians]), fd.derivatives(Q, QD, IN)[1])
    copy = tmp_path / "entry"
    shutil.copytree(fd.directory, copy)
    data = pickle.dumps(nelu.Solver(copy, nelu_exe=nelu.find_nelu()))
    shutil.rmtree(copy)
    with pytest.raises(nelu.Error, match=r"the cache entry of this pickled solver no longer exists"):
        pickle.loads(data)


_PUBLIC = [nelu.compile, nelu.model, nelu.cache_dir, nelu.find_nelu, nelu.slot_label, nelu.status_name, nelu.Solver.__init__,
           nelu.Solver.__call__, nelu.Solver.derivatives, nelu.Solver.check]


def test_public_api_is_annotated():
    """Every parameter and return of the public functions has an annotation that resolves."""
    for f in _PUBLIC:
        hints = typing.get_type_hints(f)
        parameters = [p for p in inspect.signature(f).parameters if p != "self"]
        assert set(parameters) | {"return"} <= set(hints), f.__qualname__


_TYPED_USE = """
import numpy as np
import nelu
fd = nelu.compile("robot.urdf", problem="fd", derivatives=True)
out = fd(np.zeros(6), np.zeros(6), [0.0] * 42)
reveal_type(out)
out, status = fd(np.zeros(6), np.zeros(6), np.zeros(42), return_status=True)
reveal_type(status)
reveal_type(fd.derivatives(np.zeros(6), np.zeros(6), np.zeros(42)))
fd.derivatives(np.zeros(6), np.zeros(6), np.zeros(42), out=np.zeros(6))
nelu.compile(3)
"""


def test_type_checker_sees_the_annotations(tmp_path):
    """mypy (when installed) type-checks code using the package: the results' types are revealed
    as annotated, and wrong arguments are errors. When the package is installed, mypy reads it
    from the environment, which it does only for a package with a py.typed marker (PEP 561)."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (Debian: python3-mypy)")
    (tmp_path / "use.py").write_text(_TYPED_USE)
    env = dict(os.environ)
    if not _installed():
        env["MYPYPATH"] = str(Path(nelu.__file__).parents[1])
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), "use.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    report = proc.stdout + proc.stderr
    assert "py.typed" not in report and "missing library stubs" not in report, report
    lines = report.splitlines()
    floating = "numpy.ndarray[Any, numpy.dtype[numpy.floating[Any]]]"
    assert any(f"use.py:6: note: Revealed type is \"{floating}\"" in ln for ln in lines), report
    assert any("use.py:8: note: Revealed type is \"Union[builtins.int, numpy.ndarray[Any, numpy.dtype[" in ln for ln in lines), report
    assert any(f"use.py:9: note: Revealed type is \"Tuple[{floating}, {floating}]\"" in ln for ln in lines), report
    errors = sorted(int(ln.split(":")[1]) for ln in lines if ": error: " in ln)
    assert errors == [10, 11], report


def _installed() -> bool:
    """Whether the imported package is an installed distribution's (not python/ on sys.path)."""
    try:
        dist = importlib.metadata.distribution("nelu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return Path(dist.locate_file("nelu/__init__.py")).resolve() == Path(nelu.__file__).resolve()


def test_one_version_and_py_typed_installed():
    """The installed distribution's version is nelu.__version__ (pyproject.toml reads it from
    nelu/_version.py) and its files include the py.typed marker."""
    if not _installed():
        pytest.skip("the package is imported from its source tree, not installed (scripts/python_package.sh installs it)")
    dist = importlib.metadata.distribution("nelu")
    assert dist.version == nelu.__version__
    assert "nelu/py.typed" in {str(f) for f in dist.files or []}


def test_threads_example_runs(cache):
    """examples/python/batch_threads.py (the measurement of docs/python.md, "Threads") runs, here
    on a small batch."""
    env = {**os.environ, "NELU_CACHE_DIR": str(cache), "CXXFLAGS": TEST_FLAGS, "PYTHONPATH": str(Path(nelu.__file__).parents[1])}
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "python" / "batch_threads.py"), "--robots", "ur5e", "--n", "300",
                           "--repeats", "3"], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^ur5e_fd n=300: workers=1 \d+ ns/state \(CPU [\d.]+\), workers=2 \d+ ns/state \(CPU [\d.]+\); "
                     r"speed-up [\d.]+ \(quartiles [\d.]+-[\d.]+, range [\d.]+-[\d.]+\)$", proc.stdout, re.M), proc.stdout
