"""The ``nelu`` executable: where it is, how to run it, what it says about itself."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from ._errors import Error, ToolNotFoundError, error_for_exit

def _repository_build() -> Path | None:
    """build/compiler/nelu of the nelu repository the package sits in: imported from its python/
    directory, or installed into a virtual environment inside it (the README's .venv)."""
    for directory in Path(__file__).resolve().parents:
        if (directory / "compiler" / "main.cpp").is_file() and (directory / "runtime" / "include" / "nelu").is_dir():
            exe = directory / "build" / "compiler" / "nelu"
            return exe if exe.is_file() else None
    return None


def find_nelu(nelu_exe: str | os.PathLike[str] | None = None) -> str:
    """The ``nelu`` executable: ``nelu_exe`` if given, else the environment variable NELU_EXE, else
    ``nelu`` on the PATH, else build/compiler/nelu of the repository the package sits in (imported
    from python/, or installed into a virtual environment inside the repository).
    Raises ToolNotFoundError naming what was tried."""
    for given, origin in ((nelu_exe, "the nelu_exe argument"), (os.environ.get("NELU_EXE") or None, "NELU_EXE")):
        if given is not None:
            found = shutil.which(str(given))
            if found is None:
                raise ToolNotFoundError(f"{origin} names '{given}', which is not an executable file")
            return os.path.abspath(found)
    found = shutil.which("nelu")
    if found is not None:
        return os.path.abspath(found)
    build = _repository_build()
    if build is not None:
        return str(build)
    raise ToolNotFoundError("the nelu executable is not found: give nelu_exe=, set NELU_EXE, or put nelu on the PATH "
                            "(cmake --install, or build it: cmake --build build --target nelu)")


def path_arg(path: str | os.PathLike[str]) -> str:
    """A file name as an argument of nelu, as the caller spelled it (so that messages name it so),
    but never taken for an option."""
    p = os.fspath(path)
    return "./" + p if p.startswith("-") else p


def load_args(*, floating_base: bool, snap: float | None, ignore_mimic: bool) -> list[str]:
    """The options of how a URDF is loaded, as `nelu model` and `nelu compile` take them."""
    args = ["--floating-base"] if floating_base else []
    if snap:
        args += ["--snap", repr(float(snap))]
    if ignore_mimic:
        args.append("--ignore-mimic")
    return args


def run(exe: str, args: list[str]) -> subprocess.CompletedProcess:
    """Run ``nelu ARGS``; a non-zero exit raises the exception of its exit code, with the CLI's message."""
    command = [exe, *args]
    proc = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        if proc.returncode < 0:
            message = f"nelu {args[0] if args else ''} was killed by signal {-proc.returncode}"
        else:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            message = "\n".join(lines) or proc.stdout.strip() or f"nelu exited with code {proc.returncode}"
            if proc.returncode == 3 and proc.stdout.strip():  # a failed check: its report is on stdout
                message = (message + "\n" if lines else "") + proc.stdout.strip()
        raise error_for_exit(proc.returncode, message, command=command, stdout=proc.stdout, stderr=proc.stderr)
    return proc


def _stamp(exe: str) -> tuple[str, int, int]:
    st = os.stat(exe)
    return (os.path.realpath(exe), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _about(stamp: tuple[str, int, int]) -> tuple[str, str]:
    exe = stamp[0]
    try:
        version = run(exe, ["--version"]).stdout.strip()
        include = run(exe, ["--runtime-include"]).stdout.strip()
    except Error as e:
        raise ToolNotFoundError(f"{exe} does not answer as nelu: `{exe} --version` failed ({e}); point NELU_EXE "
                                f"(or nelu_exe=) at the nelu executable") from None
    if not re.fullmatch(r"\d+\.\d+\.\d+\S*", version) or not (Path(include) / "nelu" / "status.h").is_file():
        raise ToolNotFoundError(f"{exe} does not answer as nelu: `--version` printed {version[:80]!r} and `--runtime-include` "
                                f"{include[:80]!r} (nelu prints its version, e.g. 0.1.0, and the directory of its runtime headers); "
                                f"point NELU_EXE (or nelu_exe=) at the nelu executable")
    return version, include


def about(exe: str) -> tuple[str, str, tuple[str, int, int]]:
    """The version of the executable, the directory of the runtime headers it prints
    (``nelu --runtime-include``), and its identity (real path, size, modification time): asked once
    per executable and process."""
    stamp = _stamp(exe)
    version, include = _about(stamp)
    return version, include, stamp
