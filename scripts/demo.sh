#!/usr/bin/env bash
# demo.sh: the main job on a shipped robot. Build nelu; compile the robot's inverse and forward
# dynamics into unrolled C++; build each generated solver with the system compiler and verify it
# against the reference algorithms (double and float, 1000 random states plus special ones); print
# the operation-count table beside RNEA and ABA. nelu: NELU or NELU_BUILD_DIR (scripts/lib.sh).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
robot=${1:-robots/ur5e.urdf}
out=${NELU_DEMO_OUT:-out/demo}
find_nelu
mkdir -p "$out"
echo "== model"
"$nelu" model "$robot"
for problem in id fd; do
  echo "== compile $problem"
  "$nelu" compile "$robot" --problem "$problem" -o "$out"
done
stem=$(basename "$robot" .urdf)
name=$("$nelu" model "$robot" | sed -n "s/^robot '\(.*\)' from.*/\1/p")
for problem in id fd; do
  echo "== build and verify ${name}_${problem}"
  "$nelu" check "$robot" "$out/${name}_${problem}.json"
done
echo "== operation counts"
"$nelu" report "$out/${name}_id.json" "$out/${name}_fd.json"
echo "demo: done ($stem; outputs in $out)"
