#!/usr/bin/env bash
# derivatives_bench.sh: time the derivative solvers beside the value solvers and central
# differences of the value solvers (bench/derivatives_driver.cpp), on the shipped robots without
# external wrenches (bench/specs/*_zero_fx.yaml: the Jacobian's q, qd and tau or qdd columns) and
# with them (the id and fd presets). Prints a Markdown table for docs/derivatives.md. g++ -O2.
# "ops / entry" is (derivative ops - value ops) / the structurally nonzero entries of jac (rows x
# columns less the manifest's derivatives.structural_zeros.count): what one Jacobian entry costs
# beyond the outputs.
#   NELU, NELU_BUILD_DIR   the nelu used (scripts/lib.sh)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
find_nelu
tmp="$(mktemp -d "${TMPDIR:-/tmp}/nelu-derivatives.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "| robot | problem | columns | nonzero entries | value ops | derivative ops | ops / entry | value ns | derivatives ns | ratio | central differences ns | differences / derivatives |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
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
    # columns, nonzero entries, value ops, derivative ops, ops per nonzero entry (mul + add + div)
    read -r cols nnz vops dops per <<<"$(python3 -c "
import json
d = json.load(open('$m')); j = d['derivatives']; o = d['ops']; e = j['ops']
v, t = o['mul'] + o['add'] + o['div'], e['mul'] + e['add'] + e['div']
n = j['jac_rows'] * j['jac_cols'] - j['structural_zeros']['count']
print(j['jac_cols'], n, v, t, f'{(t - v) / n:.1f}')")"
    echo "| $robot${flags:+ (floating)} | $label | $cols | $nnz | $vops | $dops | $per | $v | $d | $(python3 -c "print(f'{$d/$v:.1f}x')") | $f | $(python3 -c "print(f'{$f/$d:.1f}x')") |"
done <<'LIST'
ur5e - bench/specs/id_zero_fx.yaml id
ur5e - bench/specs/fd_zero_fx.yaml fd
panda_gaz2019 - bench/specs/id_zero_fx.yaml id
panda_gaz2019 - bench/specs/fd_zero_fx.yaml fd
quadruped_minicheetah --floating-base bench/specs/id_zero_fx.yaml id
quadruped_minicheetah --floating-base bench/specs/fd_zero_fx.yaml fd
humanoid_winter --floating-base bench/specs/id_zero_fx.yaml id
humanoid_winter --floating-base bench/specs/fd_zero_fx.yaml fd
ur5e - id id_with_fx
ur5e - fd fd_with_fx
LIST
