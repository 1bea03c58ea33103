#!/usr/bin/env bash
# same_output.sh OLD_NELU NEW_NELU: compile a fixed set of robots, problems and specs with two nelu
# binaries and compare everything they write, byte for byte: the generated sources, headers and
# manifests (with --derivatives and --batch), the spy plots, the workspace forms, what they print
# on stdout and stderr, and their exit codes. A reshaping of the compiler must pass it unchanged.
#
#   scripts/same_output.sh /tmp/nelu-before build/compiler/nelu
#   NELU_SAME_QUICK=1 ...   only the cases that take under a few seconds each (no public robots)
#
# Exits 0 when every case is identical, 1 naming each case that differs (its diff is kept under
# the printed directory), 2 on usage errors.
set -euo pipefail
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: $0 OLD_NELU NEW_NELU (two executables)" >&2
  exit 2
fi
old="$(realpath "$1")"
new="$(realpath "$2")"
cd "$(dirname "$0")/.."
root="$PWD"
shared="$root/../shared/robots"
work="$(mktemp -d "${TMPDIR:-/tmp}/nelu-same.XXXXXX")"

# One case a line: NAME|URDF|PROBLEM|FLAGS
cases=()
add() { cases+=("$1|$2|$3|${4:-}"); }
for robot in ur5e panda_gaz2019 quadruped_minicheetah humanoid_winter; do
  for p in id fd; do
    add "${robot}_$p" "robots/$robot.urdf" "$p" "--derivatives --batch --spy $work/SPY.svg"
    add "${robot}_floating_$p" "robots/$robot.urdf" "$p" "--floating-base --derivatives --batch"
  done
  add "${robot}_hybrid" "robots/$robot.urdf" hybrid "--derivatives"
  add "${robot}_fd_small_stack" "robots/$robot.urdf" fd "--max-stack 2048 --scalar float"
done
spec_robot() {
  case "$(basename "$1")" in
    humanoid*) echo robots/humanoid_winter.urdf ;;
    minicheetah*) echo robots/quadruped_minicheetah.urdf ;;
    panda*) echo robots/panda_gaz2019.urdf ;;
    ur5e*) echo robots/ur5e.urdf ;;
    *) echo "" ;;
  esac
}
for spec in robots/specs/*.yaml tests/fixtures/derivatives/*.yaml tests/fixtures/batch/*.yaml; do
  r="$(spec_robot "$spec")"
  [ -n "$r" ] || continue
  n="$(basename "$spec" .yaml)_$(dirname "$spec" | tr / _)"
  add "$n" "$r" "$spec" "--derivatives --batch"
  add "${n}_plain" "$r" "$spec" ""
done
for spec in bench/specs/*.yaml; do
  add "bench_$(basename "$spec" .yaml)_humanoid" robots/humanoid_winter.urdf "$spec" "--floating-base"
  add "bench_$(basename "$spec" .yaml)_ur5e" robots/ur5e.urdf "$spec" "--derivatives"
done
for spec in tests/fixtures/sensor_specs/*.yaml; do
  r="$(sed -n 's/^# robot: //p' "$spec" | head -1)"
  case "$r" in
    robots/*) ;;
    fixture:*) r="tests/fixtures/sensor_specs/${r#fixture:}" ;;
    shared:*) r="$shared/${r#shared:}"; [ -f "$r" ] || continue ;;
    *) continue ;;
  esac
  add "sensor_$(basename "$spec" .yaml)" "$r" "$spec" "--derivatives --batch"
done
while read -r name urdf problem flags; do
  case "$name" in ''|'#'*) continue ;; esac
  add "generated_$name" "$urdf" "$problem" "$flags"
done < generated/MANIFEST.txt
if [ -z "${NELU_SAME_QUICK:-}" ] && [ -d "$shared" ]; then
  for robot in iiwa kinova solo12 ur5; do
    add "shared_${robot}_fd" "$shared/$robot.urdf" fd "--derivatives --batch"
  done
  add shared_solo12_floating_fd "$shared/solo12.urdf" fd "--floating-base --derivatives --batch"
  add shared_icub_floating_id "$shared/icub_reduced.urdf" id "--floating-base --derivatives --ignore-mimic"
  add shared_icub_floating_fd "$shared/icub_reduced.urdf" fd "--floating-base --derivatives --ignore-mimic"
fi

run_case() {  # BIN SIDE CASE
  local bin="$1" side="$2" name urdf problem flags
  IFS='|' read -r name urdf problem flags <<<"$3"
  local out="$work/$side/$name"
  mkdir -p "$out"
  flags="${flags//$work\/SPY.svg/$out/spy.svg}"
  # shellcheck disable=SC2086  # FLAGS are words
  (cd "$root" && "$bin" compile "$urdf" --problem "$problem" --name "$name" -o "$out" $flags \
      >"$out/stdout" 2>"$out/stderr"; echo $? >"$out/exit")
  # the output directory's name is the only thing allowed to differ
  sed -i "s|$work/$side|DIR|g" "$out/stdout" "$out/stderr"
}
export -f run_case
export root work
printf '%s\n' "${cases[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_case "$0" old "{}"' "$old"
printf '%s\n' "${cases[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_case "$0" new "{}"' "$new"

differ=0
for c in "${cases[@]}"; do
  name="${c%%|*}"
  if ! diff -r "$work/old/$name" "$work/new/$name" >"$work/$name.diff" 2>&1; then
    echo "same_output: DIFFERS: $c (diff: $work/$name.diff)"
    differ=$((differ + 1))
  else
    rm -f "$work/$name.diff"
  fi
done
echo "same_output: ${#cases[@]} cases, $differ differ; outputs in $work"
[ "$differ" -eq 0 ]
