#!/usr/bin/env bash
# firmware.sh [ROBOT.urdf]: build a robot's generated solvers for microcontrollers and embedded
# Linux, run them under QEMU on 100 deterministic states, compare every output with the host's,
# and print what they cost there (code bytes, stack, instructions per call). See docs/firmware.md.
#
#   solvers  ROBOT_id and ROBOT_fd (floating base for robots named *quadruped* or *humanoid*);
#            ROBOT_fd with --max-stack 0, so that its workspace form (NAME_ws) is built and checked
#            too; for the humanoid also the sensor problem robots/specs/humanoid_slippery.yaml; all
#            with --batch (NAME.hpp and NAME.cpp are the same with and without it), whose batch
#            forms NAME_batch and NAME_f_batch (NAME_batch.cpp) are built and run on aarch64 only
#            (NEON: 2 double lanes, 4 float), in two calls of 97 and 3 states, and compiled for the
#            Cortex-M7 and M4 (with the derivative solver's batch form: -Werror)
#   targets  cortex-m7  Cortex-M7, double-precision FPU, QEMU mps2-an500 (double and float)
#            cortex-m4  Cortex-M4F, single-precision FPU, QEMU mps2-an386 (float solvers only)
#            aarch64    aarch64 Linux, static, qemu-aarch64 user mode (double and float)
#   checks   max|out - ref| / max(max|ref|, 1) over the outputs of each call, against the host's
#            ordinary entry point of the same scalar: double <= 1e-12, float <= 1e-4; equal status
#            (the batch forms' rows too, each state's against the host's scalar entry point)
#   costs    code: bytes of the entry point's functions (nm -S); stack estimate: nelu's, from the
#            header (ordinary entry points only); static stack: its frame and its
#            deepest callee chain (-fstack-usage -fcallgraph-info=su; libm's sin/cos not included);
#            measured stack: stack painted below the caller, deepest word written by one call
#            (libm included); instructions: one call on state 0, counted in QEMU's execution trace
#            with one instruction per translation block (-singlestep -d exec,nochain); for a
#            batch form, per state of a call of 8 states
#   derivatives  ROBOT_fdj, fd --derivatives (double): NAME_derivatives with its Jacobian's columns in
#            NEON lanes on aarch64 and column by column on the Cortex-M7, every state's out and jac
#            against the host's (SSE2 lanes) to 1e-12 (scripts/firmware/jac_driver.cpp)
#   also     builds examples/firmware with its Makefile and runs it on the Cortex-M7
# Exits 1 on any mismatch or failed build or run, 2 on a missing tool or a bad argument.
#   NELU, NELU_BUILD_DIR  the nelu used (scripts/lib.sh)
#   NELU_FIRMWARE_DIR  where everything is written (default: $NELU_BUILD_DIR/firmware/ROBOT)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
robot="${1:-robots/ur5e.urdf}"
[ $# -le 1 ] || { echo "usage: scripts/firmware.sh [ROBOT.urdf]" >&2; exit 2; }
[ -f "$robot" ] || { echo "firmware: $robot: no such file" >&2; exit 2; }
robot="$(cd "$(dirname "$robot")" && pwd)/$(basename "$robot")"
base="$(basename "$robot" .urdf)"
work="${NELU_FIRMWARE_DIR:-$build_dir/firmware/$base}"

# --- tools (Debian packages in scripts/setup.sh)
for t in g++ arm-none-eabi-gcc arm-none-eabi-g++ arm-none-eabi-nm aarch64-linux-gnu-g++ aarch64-linux-gnu-nm \
         qemu-system-arm qemu-aarch64 nm make; do
  command -v "$t" >/dev/null || { echo "firmware: $t not found: run scripts/setup.sh (as root)" >&2; exit 2; }
done
[ -f "$(arm-none-eabi-gcc -print-file-name=rdimon.specs)" ] ||
  { echo "firmware: newlib's rdimon.specs not found: install libnewlib-arm-none-eabi (scripts/setup.sh)" >&2; exit 2; }
echo '#include <cmath>' | arm-none-eabi-g++ -x c++ -fsyntax-only - 2>/dev/null ||
  { echo "firmware: arm-none-eabi-g++ has no C++ headers: install libstdc++-arm-none-eabi-newlib (scripts/setup.sh)" >&2; exit 2; }

find_nelu
rm -rf "$work"
mkdir -p "$work"/{src,src_float,host,cortex-m7,cortex-m4,aarch64,example}
log="$work/log.txt"
fail() { echo "firmware: $*" >&2; echo "firmware: details in $log" >&2; exit 1; }
run() { "$@" >>"$log" 2>&1 || fail "failed: $*"; }

# --- solvers: NAME PROBLEM FLAGS
fb=""
case "$base" in *quadruped*|*humanoid*) fb=--floating-base ;; esac
solvers=("${base}_id id $fb" "${base}_fd fd $fb --max-stack 0")
case "$base" in *humanoid*) solvers+=("${base}_slippery $root/robots/specs/humanoid_slippery.yaml") ;; esac
names=()
for s in "${solvers[@]}"; do
  read -r name problem flags <<<"$s"
  echo "== nelu compile $base --problem $(basename "$problem") $flags --name $name" >>"$log"
  # shellcheck disable=SC2086  # flags are words
  run "$nelu" compile "$robot" --problem "$problem" --name "$name" -o "$work/src" --batch $flags
  # shellcheck disable=SC2086
  run "$nelu" compile "$robot" --problem "$problem" --name "$name" -o "$work/src_float" --scalar float $flags
  names+=("$name")
done

# fw_table.inc for a source directory: the solvers' headers and the table of their entry points
table() {
  local dir="$1" max=0 n
  {
    for n in "${names[@]}"; do
      echo "#include \"$n.hpp\""
      if [ -f "$dir/${n}_batch.hpp" ]; then echo "#include \"${n}_batch.hpp\""; fi
    done
    echo "static const FwSolver fw_solvers[] = {"
    for n in "${names[@]}"; do
      local h="$dir/$n.hpp" d=nullptr f=nullptr dws=nullptr fws=nullptr db=0 fb_=0 bd=nullptr bf=nullptr
      grep -q "^int $n(" "$h" && d="$n"
      grep -q "^int ${n}_f(" "$h" && f="${n}_f"
      grep -q "^int ${n}_ws(" "$h" && dws="${n}_ws" db="${n}_WORK_BYTES"
      grep -q "^int ${n}_f_ws(" "$h" && fws="${n}_f_ws" fb_="${n}_F_WORK_BYTES"
      if [ -f "$dir/${n}_batch.hpp" ]; then  # the batch forms, referenced in builds with FW_BATCH only
        grep -q "^int ${n}_batch(" "$dir/${n}_batch.hpp" && bd="FW_BATCH_FN(${n}_batch)"
        grep -q "^int ${n}_f_batch(" "$dir/${n}_batch.hpp" && bf="FW_BATCH_FN(${n}_f_batch)"
      fi
      echo "    {\"$n\", ${n}_NQ, ${n}_NV, ${n}_NIN, ${n}_NOUT, $d, $f, $dws, $fws, $db, $fb_, $bd, $bf},"
      for w in $(sed -n "s/^#define ${n}_\(F_\)\?WORK_BYTES \([0-9]*\)$/\2/p" "$h"); do [ "$w" -gt "$max" ] && max=$w; done
    done
    echo "};"
    echo "#define FW_WORK_BYTES $max"
  } >"$dir/fw_table.inc"
}
table "$work/src"
table "$work/src_float"
# nelu's stack estimates of the ordinary entry points, from the headers
for n in "${names[@]}"; do
  sed -n "s/.*: $n about \([0-9]*\) bytes, ${n}_f about \([0-9]*\) bytes\.$/$n d \1\n$n f \2/p" "$work/src/$n.hpp"
done >"$work/estimates.txt"

# --- host tool and the host reference (the ordinary entry points, double and float)
run g++ -std=c++17 -O1 -o "$work/fwtool" scripts/firmware/fwtool.cpp
fwtool="$work/fwtool"
common=(-std=c++17 -O2 -fno-exceptions -fno-rtti -Wall -Wextra -Werror -I"$root/runtime/include")
# the generated sources also under the warnings firmware teams enable (tests/CMakeLists.txt, NELU_STRICT_WARNINGS)
strict=(-Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wdouble-promotion -Wundef -Wfloat-equal -Wcast-align)
driver_flags=(-ffp-contract=off)  # the states: exact arithmetic only, so that every target has the same inputs
host_objs=()
for n in "${names[@]}"; do
  run g++ "${common[@]}" "${strict[@]}" -c "$work/src/$n.cpp" -o "$work/host/$n.o"
  run g++ "${common[@]}" "${strict[@]}" -c "$work/src/${n}_batch.cpp" -o "$work/host/${n}_batch.o"
  host_objs+=("$work/host/$n.o" "$work/host/${n}_batch.o")
done
run g++ "${common[@]}" "${driver_flags[@]}" -DFW_BATCH -I"$work/src" scripts/firmware/driver.cpp "${host_objs[@]}" -o "$work/host/driver"
"$work/host/driver" >"$work/host/out.txt" || fail "the host driver failed"

# --- one target: build the solvers and the driver (and its trace build), run, count, compare
#   target NAME SRC_DIR CXX NM CPU_FLAGS... -- LINK_FLAGS... -- RUN_COMMAND...
# The targets in batch_targets also build and run the batch forms (NAME_batch.cpp, -DFW_BATCH).
batch_targets=" aarch64 "
status=0
rows="$work/rows.md"
: >"$rows"
target() {
  local tname="$1" src="$2" cxx="$3" nmtool="$4"
  shift 4
  local cpu=() lnk=() runner=()
  while [ "$1" != "--" ]; do cpu+=("$1"); shift; done; shift
  while [ "$1" != "--" ]; do lnk+=("$1"); shift; done; shift
  runner=("$@")
  local out="$work/$tname" objs=() n batch=() f
  [[ "$batch_targets" == *" $tname "* ]] && batch=(-DFW_BATCH)
  echo "== $tname: ${cpu[*]}" | tee -a "$log"
  for n in "${names[@]}"; do
    for f in "$n" ${batch:+"${n}_batch"}; do
      (cd "$out" && run "$cxx" "${common[@]}" "${strict[@]}" "${cpu[@]}" -fstack-usage -fcallgraph-info=su -c "$src/$f.cpp" -o "$out/$f.o")
      objs+=("$out/$f.o")
    done
  done
  "$nmtool" -S -C "${objs[@]}" >"$out/nm.txt"
  "$fwtool" sizes "$out/nm.txt" "${names[@]}" >"$out/sizes.txt"
  "$fwtool" static "$out"/*.ci >"$out/static.txt"
  for mode in check trace; do
    local def=()
    [ "$mode" = trace ] && def=(-DFW_TRACE)
    run "$cxx" "${common[@]}" "${cpu[@]}" "${driver_flags[@]}" "${def[@]}" "${batch[@]}" -I"$src" -c scripts/firmware/driver.cpp -o "$out/driver_$mode.o"
    run "$cxx" "${cpu[@]}" "$out/driver_$mode.o" "${objs[@]}" "${lnk[@]}" -o "$out/$mode.elf"
  done
  timeout 600 "${runner[@]}" "$out/check.elf" >"$out/out.txt" 2>>"$log" || fail "$tname: the driver did not run to its end"
  # shellcheck disable=SC2086  # the runner takes the trace options before the program
  timeout 600 "${runner[0]}" -singlestep -d exec,nochain -D "$out/trace.log" "${runner[@]:1}" "$out/trace.elf" \
    >"$out/trace_out.txt" 2>>"$log" || fail "$tname: the trace run failed"
  "$fwtool" count "$out/trace.log" "$out/trace_out.txt" >"$out/counts.txt" || fail "$tname: cannot count instructions"
  rm -f "$out/trace.log"
  if ! "$fwtool" compare "$work/host/out.txt" "$out/out.txt" "$tname" "$out/counts.txt" "$out/static.txt" "$out/sizes.txt" "$work/estimates.txt" 1e-12 1e-4 >>"$rows"; then
    status=1
  fi
}

m_link=(--specs=rdimon.specs -nostartfiles -T "$root/examples/firmware/cortex-m.ld" -Wl,--defsym=STACK_SIZE=0x30000 -lm)
qemu_m=(qemu-system-arm -nographic -monitor none -serial none -semihosting-config enable=on,target=native)
for t in cortex-m7 cortex-m4; do
  case $t in
    cortex-m7) cpu=(-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard -mthumb) board=mps2-an500 src="$work/src" ;;
    cortex-m4) cpu=(-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb) board=mps2-an386 src="$work/src_float" ;;
  esac
  run arm-none-eabi-gcc -std=c11 -O2 -Wall -Wextra -Werror "${cpu[@]}" -DFW_SEMIHOSTING -c examples/firmware/startup.c -o "$work/$t/startup.o"
  target "$t" "$src" arm-none-eabi-g++ arm-none-eabi-nm "${cpu[@]}" -- "$work/$t/startup.o" "${m_link[@]}" -- \
    "${qemu_m[0]}" -M "$board" "${qemu_m[@]:1}" -kernel
done
target aarch64 "$work/src" aarch64-linux-gnu-g++ aarch64-linux-gnu-nm -march=armv8-a -- -static -- qemu-aarch64

# --- a derivative solver (fd --derivatives): its Jacobian's columns in NEON lanes on aarch64 and column
# by column on the Cortex-M7 (no lanes: the #else program), every state's out and jac against the
# host's (SSE2 lanes), scripts/firmware/jac_driver.cpp
echo "== derivatives: $base fd --derivatives on aarch64 and cortex-m7" | tee -a "$log"
jn="${base}_fdj" jdir="$work/jac"
mkdir -p "$jdir"/{src,host,aarch64,cortex-m7}
# shellcheck disable=SC2086  # fb is one word or none
run "$nelu" compile "$robot" --problem fd $fb --derivatives --batch --name "$jn" -o "$jdir/src"
jac_rows="$jdir/rows.md"
: >"$jac_rows"
jac_target() {  # jac_target NAME CXX CPU_FLAGS... -- LINK_FLAGS... -- RUN_COMMAND...
  local tname="$1" cxx="$2" cpu=() lnk=() runner=() out="$jdir/$1"
  shift 2
  while [ "$1" != "--" ]; do cpu+=("$1"); shift; done; shift
  while [ "$1" != "--" ]; do lnk+=("$1"); shift; done; shift
  runner=("$@")
  run "$cxx" "${common[@]}" "${strict[@]}" "${cpu[@]}" -c "$jdir/src/$jn.cpp" -o "$out/$jn.o"
  run "$cxx" "${common[@]}" "${cpu[@]}" "${driver_flags[@]}" -include "$jdir/src/$jn.hpp" -DFW_JAC="$jn" -c scripts/firmware/jac_driver.cpp -o "$out/driver.o"
  run "$cxx" "${cpu[@]}" "$out/driver.o" "$out/$jn.o" "${lnk[@]}" -o "$out/jac.elf"
  timeout 600 "${runner[@]}" "$out/jac.elf" >"$out/out.txt" 2>>"$log" || fail "$tname: the derivative driver did not run to its end"
}
jac_target host g++ -- -- env
for t in aarch64 cortex-m7; do
  case $t in
    aarch64) jac_target aarch64 aarch64-linux-gnu-g++ -march=armv8-a -- -static -- qemu-aarch64; lanes=16 ;;
    cortex-m7) jac_target cortex-m7 arm-none-eabi-g++ -mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard -mthumb -- "$work/cortex-m7/startup.o" "${m_link[@]}" -- \
                 "${qemu_m[0]}" -M mps2-an500 "${qemu_m[@]:1}" -kernel; lanes=0 ;;
  esac
  "$fwtool" jac "$jdir/host/out.txt" "$jdir/$t/out.txt" "$t" "$lanes" 1e-12 >>"$jac_rows" || status=1
done

# --- the batch forms (value and derivative solvers) compile warning-free for the Cortex-M too,
# where they are a loop over the states (W = 1); they are run on aarch64 only
echo "== batch forms: compiled for cortex-m7 and cortex-m4" | tee -a "$log"
for t in cortex-m7 cortex-m4; do
  case $t in
    cortex-m7) cpu=(-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard -mthumb) ;;
    cortex-m4) cpu=(-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard -mthumb) ;;
  esac
  for f in "$work/src"/*_batch.cpp "$jdir/src"/*_batch.cpp; do
    run arm-none-eabi-g++ "${common[@]}" "${strict[@]}" "${cpu[@]}" -I"$(dirname "$f")" -c "$f" -o "$work/$t/$(basename "$f" .cpp).o"
  done
done

# --- examples/firmware, built with its own Makefile and run on the Cortex-M7
echo "== examples/firmware" | tee -a "$log"
run make -C examples/firmware BUILD="$work/example" NELU="$nelu" URDF="$robot" >>"$log" 2>&1
timeout 120 "${qemu_m[0]}" -M mps2-an500 "${qemu_m[@]:1}" -kernel "$work/example/firmware.elf" >"$work/example/out.txt" 2>>"$log" ||
  fail "examples/firmware: the program failed under QEMU"
grep -q "status 0" "$work/example/out.txt" || fail "examples/firmware: unexpected output: $(cat "$work/example/out.txt")"
sed 's/^/  /' "$work/example/out.txt"

echo
echo "$base: generated solvers on three targets, 100 states each, compared with the host"
echo
echo "| target | entry point | code (B) | stack estimate (B) | static stack (B) | measured stack (B) | instructions/call | states | max rel. error | result |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
cat "$rows"
echo
echo "$base: a derivative solver (fd --derivatives: out and jac) on two targets, 100 states each, compared with the host (SSE2 lanes)"
echo
echo "| target | entry point | Jacobian's columns in lanes | states | max rel. error | result |"
echo "|---|---|---|---:|---:|---|"
cat "$jac_rows"
if [ "$status" -ne 0 ]; then
  echo "firmware: FAILED: an output differs from the host's beyond its tolerance, or a status differs (rows above)" >&2
  exit 1
fi
echo
echo "firmware: PASS ($(wc -l <"$rows") entry points on 3 targets; files in $work)"
