#!/usr/bin/env bash
# regenerate.sh: rebuild nelu and regenerate the committed solvers in generated/ from the list in
# generated/MANIFEST.txt (NAME URDF PROBLEM [FLAGS...]), the same list that
# tests/test_generated_dir.cpp compiles and compares byte for byte. Run it to accept a deliberate
# change of the generated code, then review `git diff generated/` and commit it.
#
# Everything is written to a temporary directory first; generated/ is only replaced when every
# entry compiled. Solver files in generated/ that the manifest no longer lists are removed.
# nelu: NELU or NELU_BUILD_DIR (scripts/lib.sh).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
find_nelu

tmp="$(mktemp -d "${TMPDIR:-/tmp}/nelu-regenerate.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

n=0
while read -r name urdf problem flags; do
  case "$name" in ''|'#'*) continue ;; esac
  # shellcheck disable=SC2086  # FLAGS are words
  if ! "$nelu" compile "$urdf" --problem "$problem" --name "$name" -o "$tmp" $flags >"$tmp/log" 2>&1; then
    cat "$tmp/log" >&2
    echo "regenerate: FAILED: nelu compile $urdf --problem $problem --name $name $flags" >&2
    exit 1
  fi
  for ext in hpp cpp json; do
    [ -f "$tmp/$name.$ext" ] || { echo "regenerate: nelu wrote no $name.$ext" >&2; exit 1; }
  done
  n=$((n + 1))
done < generated/MANIFEST.txt
rm -f "$tmp/log"

rm -f generated/*.hpp generated/*.cpp generated/*.json
mv "$tmp"/* generated/
echo "regenerate: $n solvers written to generated/ with $("$nelu" --version)"
git status --short -- generated/ 2>/dev/null || true
