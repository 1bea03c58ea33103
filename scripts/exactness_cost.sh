#!/usr/bin/env bash
# exactness_cost.sh: what computing exactly the loaded model costs (docs/opcounts.md, "Exactness").
# For each shipped robot and each robot in ../shared/robots: the operation count of the generated
# ID and FD solvers (mul + add + div, `nelu analyze`) for the file as it is, for a copy with
# exporter noise (`nelu robot perturb --jitter 5e-8 --seed 1`), and for both with `--snap 1e-6`.
# Prints a Markdown table. nelu: NELU or NELU_BUILD_DIR (scripts/lib.sh).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$root"
find_nelu
tmp="$(mktemp -d "${TMPDIR:-/tmp}/nelu-exactness.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

ops() {  # URDF PROBLEM [FLAGS...]: total operations, or the exit code in brackets
    local urdf="$1" problem="$2"; shift 2
    local out
    if out="$("$nelu" analyze "$urdf" --problem "$problem" --validate 500 "$@" 2>/dev/null)"; then
        sed -n 's/.*ordering .*(total \([0-9]*\)).*/\1/p' <<<"$out" | head -n 1
    else
        echo "(exit $?)"
    fi
}

echo "| robot | problem | as loaded | noisy copy | as loaded, --snap 1e-6 | noisy copy, --snap 1e-6 | values snapped (loaded / noisy) |"
echo "|---|---|---:|---:|---:|---:|---:|"
robots=(robots/*.urdf)
[ -d ../shared/robots ] && robots+=(../shared/robots/*.urdf)
for urdf in "${robots[@]}"; do
    name="$(basename "$urdf" .urdf)"
    noisy="$tmp/$name.urdf"
    "$nelu" robot perturb "$urdf" --jitter 5e-8 --seed 1 -o "$noisy"
    snapped_clean="$("$nelu" model "$urdf" --snap 1e-6 | sed -n 's/^snapped (--snap [^)]*): \([0-9]*\) value.*/\1/p')"
    snapped_noisy="$("$nelu" model "$noisy" --snap 1e-6 | sed -n 's/^snapped (--snap [^)]*): \([0-9]*\) value.*/\1/p')"
    for problem in id fd; do
        echo "| $name | $problem | $(ops "$urdf" $problem) | $(ops "$noisy" $problem) | $(ops "$urdf" $problem --snap 1e-6) | $(ops "$noisy" $problem --snap 1e-6) | $snapped_clean / $snapped_noisy |"
    done
done
