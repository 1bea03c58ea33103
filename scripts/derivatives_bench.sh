#!/usr/bin/env bash
# derivatives_bench.sh: time the derivative solvers beside the value solvers and central
# differences of the value solvers (bench/derivatives_driver.cpp), on the shipped robots without
# external wrenches (bench/specs/*_zero_fx.yaml: the Jacobian's q, qd and tau or qdd columns) and
# with them (the id and fd presets). Prints a Markdown table for docs/derivatives.md. g++ -O2.
#   NELU_BUILD_DIR   build directory with compiler/nelu (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
nelu="${NELU_BUILD_DIR:-build}/compiler/nelu"
[ -x "$nelu" ] || { echo "derivatives_bench: build nelu first ($nelu)" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/nelu-derivatives.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "| robot | problem | columns | value ops | derivative ops | value ns | derivatives ns | ratio | central differences ns | differences / derivatives |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
while read -r robot flags problem label; do
    [ -n "$robot" ] || continue
    [ "$flags" != "-" ] || flags=""
    name="s$RANDOM"
    # shellcheck disable=SC2086
    "$nelu" compile "robots/$robot.urdf" --problem "$problem" $flags --derivatives --scalar double --verify 2 --validate 500 \
        --name "$name" -o "$tmp" >/dev/null
    g++ -O2 -std=c++17 -I runtime/include -I "$tmp" -DNELU_SOLVER="$name" -DNELU_SOLVER_HEADER="\"$name.hpp\"" \
        bench/derivatives_driver.cpp "$tmp/$name.cpp" -o "$tmp/$name"
    out="$("$tmp/$name")"
    v="$(sed -n 's/^value_ns //p' <<<"$out")"; d="$(sed -n 's/^derivatives_ns //p' <<<"$out")"; f="$(sed -n 's/^differences_ns //p' <<<"$out")"
    m="$tmp/$name.json"
    cols="$(python3 -c "import json; d=json.load(open('$m')); print(d['derivatives']['jac_cols'])")"
    ops="$(python3 -c "import json; d=json.load(open('$m')); o=d['ops']; e=d['derivatives']['ops']; print(o['mul']+o['add']+o['div'], e['mul']+e['add']+e['div'])")"
    echo "| $robot${flags:+ (floating)} | $label | $cols | ${ops% *} | ${ops#* } | $v | $d | $(python3 -c "print(f'{$d/$v:.1f}x')") | $f | $(python3 -c "print(f'{$f/$d:.1f}x')") |"
done <<'LIST'
ur5e - bench/specs/id_zero_fx.yaml id
ur5e - bench/specs/fd_zero_fx.yaml fd
panda_gaz2019 - bench/specs/id_zero_fx.yaml id
panda_gaz2019 - bench/specs/fd_zero_fx.yaml fd
quadruped_minicheetah --floating-base bench/specs/id_zero_fx.yaml id
quadruped_minicheetah --floating-base bench/specs/fd_zero_fx.yaml fd
ur5e - id id_with_fx
ur5e - fd fd_with_fx
LIST
