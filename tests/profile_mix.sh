#!/usr/bin/env bash
# profile_mix.sh NELU WORKDIR: scripts/profile.sh --derivatives --mix on the UR5e's id derivatives.
# The instruction mix (callgrind, mapped onto the disassembly) must add up to the instructions per
# call that cachegrind counts independently (within 2 %: the driver's loop and call), sort most of
# them as arithmetic, and name the solver's parts; the driver's calls must all have succeeded.
set -euo pipefail
nelu="$1" work="$2"
root="$(cd "$(dirname "$0")/.." && pwd)"
rm -rf "$work"
NELU="$nelu" bash "$root/scripts/profile.sh" --derivatives --mix --no-time --calls "20 120" --out "$work" \
  "$root/robots/ur5e.urdf" --problem id >"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
rec = json.loads(open(f"{work}/profile.json").readline())
mix = json.load(open(f"{work}/O2/mix.json"))
ir, total = rec["Ir"], mix["per_call"]
print(f"cachegrind {ir:.1f} instructions per call, the mix {total:.1f}; status {rec['status']}")
assert rec["status"] == "0", "a call of the profiled solver failed"
assert abs(total - ir) <= 0.02 * ir, "the mix does not add up to cachegrind's count"
kinds = mix["kinds"]
arith = kinds.get("arithmetic", 0) + kinds.get("arithmetic (load folded)", 0)
assert arith >= 0.3 * total, f"arithmetic {arith} of {total}"
assert abs(sum(kinds.values()) - total) <= 1, "kinds do not sum to the total"
groups = mix["groups"]
assert any(g.endswith("_derivatives_partK") or g.endswith("_derivatives_impl") for g in groups), sorted(groups)
assert abs(sum(g["per_call"] for g in groups.values()) - total) <= 1, "groups do not sum to the total"
print("profile --mix: ok")
PY
