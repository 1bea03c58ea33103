#!/usr/bin/env bash
# setup.sh: install nelu's build and test dependencies from Debian (12, bookworm).
# As root, missing packages are installed with apt-get; otherwise the exact command is printed.
# Then the Python package is installed into .venv (scripts/python_package.sh, docs/python.md).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build pkg-config git
  libsuitesparse-dev libeigen3-dev libfmt-dev libcli11-dev liburdfdom-dev libtinyxml2-dev
  doctest-dev libyaml-cpp-dev libbenchmark-dev nlohmann-json3-dev
  clang libclang-rt-14-dev
  # scripts/firmware.sh: cross compilers (Cortex-M with newlib, aarch64 Linux) and QEMU
  gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib g++-aarch64-linux-gnu
  qemu-system-arm qemu-user make
  # peers of the benchmark (bench/, scripts/bench.sh); the harness skips a peer that is absent
  libmujoco-dev liborocos-kdl-dev libkdl-parser-dev libdart-utils-urdf-dev
  # Pinocchio 3.7.0 (../shared/peers, header-only; bench/CMakeLists.txt builds its URDF parser)
  libboost-filesystem-dev libboost-serialization-dev
  # scripts/profile.sh: cachegrind (valgrind), objdump and nm (binutils), the report (python3)
  valgrind binutils python3
  # the Python package (python/, docs/python.md): a virtual environment, NumPy, pytest, the build backend
  python3-venv python3-numpy python3-pytest python3-setuptools python3-wheel python3-mypy python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  bash scripts/python_package.sh && echo "setup: Python package installed in .venv"
  exit 0
fi

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run as root:  apt-get update && $cmd" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
bash scripts/python_package.sh && echo "setup: Python package installed in .venv"
echo "setup: done"
