#!/usr/bin/env bash
# profile.sh: deterministic cost measures of one generated solver (docs/large-robots.md).
#
#   bash scripts/profile.sh [OPTIONS] ROBOT.urdf --problem id|fd|SPEC [--floating-base] [COMPILE FLAGS]
#   bash scripts/profile.sh [OPTIONS] DIR/NAME.cpp
#
# The first form runs `nelu compile` (with `--scalar double` unless --scalar is given) into the
# output directory; the second profiles an already generated (or hand-edited) solver; NAME.hpp and
# NAME.json must lie beside NAME.cpp. Only the double entry point NAME() is measured, or with
# --derivatives NAME_derivatives().
#
# For each optimization level it compiles NAME.cpp with g++ LEVEL -fstack-usage, links
# bench/profile_driver.cpp (16 fixed random states, cycled; a floating base gets unit quaternions)
# and reports:
#   - valgrind cachegrind (--cache-sim=yes; I1 and D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte lines,
#     fixed so the numbers do not depend on the machine): instructions, I1/D1/LL misses, data reads
#     and writes per call, as the difference of a run of N2 calls and a run of N1 calls divided by
#     N2 - N1 (steady state: start-up and cold misses cancel), in total and per function (the
#     solver's functions and libm's sin/cos);
#   - objdump -d counts per function (static, which for straight-line code is per call):
#     instructions, loads/stores off %rsp (spills; the work struct where it sits in the caller's
#     frame), constant loads (%rip), other loads/stores (inputs, outputs, work struct by pointer);
#   - -fstack-usage frame bytes and machine-code bytes (nm -S) per function, and the wall time of
#     the g++ of the solver's object (build_s, and its CPU time build_cpu_s; every entry point of
#     NAME.cpp, as generated);
#   - unless --no-time: the median of 9 repetitions of the mean CPU time per call (ns) and
#     operations per ns, ops = mul + add + div + sqrt of the manifest's "ops" (noisy on a shared
#     machine: the cachegrind numbers are the deterministic ones).
#
# Options:
#   --opt "LEVELS"     space-separated g++ levels (default "-O2"; e.g. "-O2 -O3")
#   --cxxflags "F"     extra g++ flags for the solver's object (e.g. "-fno-inline -falign-functions=64")
#   --label L          label of the records (default: the solver's name)
#   --out DIR          work directory (default /tmp/nelu-profile/NAME-or-label); keeps the objects,
#                      disassembly, cachegrind outputs and profile.json (one JSON record per level)
#   --calls "N1 N2"    call counts of the two cachegrind runs (default "100 600")
#   --ll S,A,B         cachegrind's last level (default 8388608,16,64); 1048576,16,64 makes it the
#                      1 MiB per-core L2 of the machine of docs/large-robots.md (misses: from L3)
#   --no-time          skip the timing
#   --derivatives      measure NAME_derivatives (outputs and Jacobian) instead of NAME; the first form
#                      adds --derivatives to `nelu compile`
#   --mix              also the dynamic instruction mix (valgrind callgrind, one run of N2 calls):
#                      instructions per call by kind (arithmetic, register copies, spills, constant
#                      and other loads and stores, shuffles, tests) and per function group, written
#                      to LEVEL/mix.txt and mix.json (bench/profile/instruction_mix.py)
# Environment: NELU or NELU_BUILD_DIR, the nelu of the first form (scripts/lib.sh); CXX (default g++).
# Needs valgrind, binutils and python3 (scripts/setup.sh installs valgrind).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cxx="${CXX:-g++}"
levels="-O2" extra="" label="" out="" calls="100 600" timing=1 ll="8388608,16,64" derivatives=0 mix=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --opt) levels="$2"; shift 2 ;;
    --cxxflags) extra="$2"; shift 2 ;;
    --label) label="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --no-time) timing=0; shift ;;
    --derivatives) derivatives=1; shift ;;
    --mix) mix=1; shift ;;
    --ll) ll="$2"; shift 2 ;;
    -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -ge 1 ] || { echo "usage: scripts/profile.sh [OPTIONS] ROBOT.urdf --problem P [...] | DIR/NAME.cpp" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "profile: valgrind missing (scripts/setup.sh installs it)" >&2; exit 2; }

if [[ "${args[0]}" == *.cpp ]]; then
  cpp="$(cd "$(dirname "${args[0]}")" && pwd)/$(basename "${args[0]}")"
  name="$(basename "$cpp" .cpp)"
  out="${out:-/tmp/nelu-profile/${label:-$name}}"
  mkdir -p "$out"
else
  find_nelu
  scalar=(--scalar double)
  derivative_flag=()
  [ "$derivatives" = 1 ] && derivative_flag=(--derivatives)
  for a in "${args[@]}"; do
    [ "$a" = --scalar ] && scalar=()
    [ "$a" = --derivatives ] && derivative_flag=()
  done
  tmpname="$(basename "${args[0]}" .urdf)"
  out="${out:-/tmp/nelu-profile/${label:-$tmpname}}"
  mkdir -p "$out/gen"
  "$nelu" compile "${args[@]}" "${scalar[@]}" "${derivative_flag[@]}" -o "$out/gen" >"$out/compile.log" 2>&1 \
    || { cat "$out/compile.log" >&2; exit 1; }
  cpp="$(ls "$out"/gen/*.cpp | head -1)"
  name="$(basename "$cpp" .cpp)"
fi
dir="$(dirname "$cpp")"
manifest="$dir/$name.json"
[ -f "$manifest" ] && [ -f "$dir/$name.hpp" ] || { echo "profile: $dir/$name.hpp or .json missing" >&2; exit 2; }
floating=$(python3 -c "import json,sys; print(1 if json.load(open(sys.argv[1])).get('floating_base') else 0)" "$manifest")
if [ "$derivatives" = 1 ] && ! grep -q "^#define ${name}_NJAC " "$dir/$name.hpp"; then
  echo "profile: $dir/$name.hpp has no ${name}_derivatives (compile with --derivatives)" >&2
  exit 2
fi
label="${label:-$name}"
read -r n1 n2 <<<"$calls"
: >"$out/profile.json"

for level in $levels; do
  tag="${level#-}"
  b="$out/$tag"
  mkdir -p "$b"
  # shellcheck disable=SC2086
  { TIMEFORMAT='%R %U %S'; time (cd "$b" && "$cxx" $level $extra -std=c++17 -fstack-usage -g0 \
      -I "$root/runtime/include" -I "$dir" -c "$cpp" -o "$b/$name.o"); } 2>"$b/build_time.txt" \
    || { cat "$b/build_time.txt" >&2; exit 1; }
  read -r build_s build_user build_sys < <(tail -1 "$b/build_time.txt")
  build_cpu_s=$(python3 -c "import sys; print(round(float(sys.argv[1]) + float(sys.argv[2]), 2))" "$build_user" "$build_sys")
  "$cxx" -O2 -std=c++17 -I "$root/runtime/include" -I "$dir" -DNELU_SOLVER="$name" \
    -DNELU_SOLVER_HEADER="\"$name.hpp\"" -DNELU_FLOATING="$floating" -DNELU_DERIVATIVES="$derivatives" \
    "$root/bench/profile_driver.cpp" "$b/$name.o" -o "$b/driver"
  objdump -d --no-show-raw-insn -C "$b/$name.o" >"$b/objdump.txt"
  nm -S -C "$b/$name.o" >"$b/nm.txt"
  cg=(valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL="$ll")
  "${cg[@]}" --cachegrind-out-file="$b/cg.$n1" "$b/driver" calls "$n1" >"$b/run1.txt" 2>"$b/cg1.log"
  "${cg[@]}" --cachegrind-out-file="$b/cg.$n2" "$b/driver" calls "$n2" >"$b/run2.txt" 2>"$b/cg2.log"
  cg_annotate "$b/cg.$n2" >"$b/cg_annotate.txt" 2>/dev/null || true
  if [ "$mix" = 1 ]; then
    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no --compress-strings=no \
      --callgrind-out-file="$b/callgrind.$n2" "$b/driver" calls "$n2" >/dev/null 2>"$b/callgrind.log"
    objdump -d --no-show-raw-insn "$b/driver" >"$b/driver.objdump.txt"
    # the solver's own functions (its entry points, parts and lane blocks) and the runtime's (nelu::)
    python3 "$root/bench/profile/instruction_mix.py" --callgrind "$b/callgrind.$n2" --objdump "$b/driver.objdump.txt" \
      --calls "$n2" --functions "^${name}(_\\w+)?\$|[0-9]${name}_|4nelu" --json "$b/mix.json" | tee "$b/mix.txt"
  fi
  status=$(sed -n 's/^status //p' "$b/run2.txt")
  ns=()
  if [ "$timing" = 1 ]; then
    t=$("$b/driver" time)
    ns=(--ns "$(sed -n 's/^ns //p' <<<"$t")")
  fi
  python3 "$root/scripts/profile_analyze.py" --name "$name" --label "$label $level${extra:+ $extra}" \
    --manifest "$manifest" --source "$cpp" --cg1 "$b/cg.$n1" --cg2 "$b/cg.$n2" --calls "$n1" "$n2" \
    --objdump "$b/objdump.txt" --nm "$b/nm.txt" --su "$b/$name.su" --status "$status" "${ns[@]}" --build-seconds "$build_s" --build-cpu-seconds "$build_cpu_s" \
    --json "$out/profile.json"
done
echo "profile: details in $out (profile.json, per level: objdump.txt, cg.*, cg_annotate.txt)"
