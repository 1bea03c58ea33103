#!/usr/bin/env bash
# demo.sh: the main job on a shipped robot: build nelu, load the robot, print its model summary
# and reference dynamics at a random state, and the operation counts of the reference algorithms.
set -euo pipefail
cd "$(dirname "$0")/.."
robot=${1:-robots/ur5e.urdf}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNELU_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target nelu
./build/compiler/nelu model "$robot" --dynamics
echo
./build/compiler/nelu report --chains 7,30,100 "$robot"
