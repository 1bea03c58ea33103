#!/usr/bin/env python3
"""pairing_symmetry.py: is the pattern of D symmetric when each equation is paired with an unknown
(docs/status.md, "Contact dynamics": what an elimination that keeps the pairing would save)?

    nelu analyze ROBOT.urdf --problem SPEC [--floating-base] --dump system > system.txt
    python3 bench/profile/pairing_symmetry.py system.txt

Nori's Newton-Euler system is the KKT system of Gauss's principle: pairing the acceleration
equation of body i with f_i, its force balance with a_i, tau_i with qdd_i and a contact's
constraint rows with its lambda, D is symmetric up to the sign of rows (-X_i and -X_i^T, -S_i and
S_i^T, a contact's P and -P^T, the inertias). nelu factors each transform through auxiliary unknowns,
y1..yn on the acceleration side and z1..zn on the force side, which apply the transposed factors in
the reverse order: the row defining yK pairs with the unknown z(n+1-K) of the same body, and the
row defining zK with y(n+1-K). Components pair as wx..vz with nx..fz.

The script reads the rows of `--dump system` (each row's label and the unknowns it has entries in),
maps every row to its paired unknown, and checks that every entry (r, c) of the pattern has its
mirror (the row paired with c, the unknown paired with r). It prints the number of entries, those
without a mirror (the first few named) and the unknowns no row pairs with (a Baumgarte reference's
auxiliary columns, an impulse problem's unknowns: outside the symmetric core). Structure only: the
values' symmetry follows from the equations, not from this check.
"""
import re
import sys

W2N = {"wx": "nx", "wy": "ny", "wz": "nz", "vx": "fx", "vy": "fy", "vz": "fz"}
N2W = {v: k for k, v in W2N.items()}


def read_rows(path):
    """(kind, label tokens, unknowns) of every row of a --dump system listing."""
    rows = []
    with open(path) as f:
        for line in f:
            m = re.match(r"\s+row\s+(\d+) \((\w+)\) (.*)$", line.rstrip())
            if not m:
                continue
            toks = m.group(3).split()
            first = next(i for i, t in enumerate(toks) if "[" in t)  # a long label leaves one space
            rows.append((m.group(2), toks[:first], toks[first:]))
    return rows


def paired_unknown(kind, label, factors):
    if kind == "3a":
        return f"f[{label[0]}].{W2N[label[1]]}"
    if kind == "3f":
        return f"a[{label[0]}].{N2W[label[1]]}"
    if kind == "3tau":
        return f"qdd[{label[0]}]" + (f".{label[1]}" if len(label) > 1 else "")
    if kind == "contact":
        return f"lambda[{label[0]}].{W2N.get(label[1], label[1])}"
    if kind == "aux" and len(label) == 3 and label[0][0] in "yz":
        side, body, comp = label[0][0], label[1], label[2]
        k = factors[(side, body)] + 1 - int(label[0][1:])
        return f"z{k}[{body}].{W2N[comp]}" if side == "y" else f"y{k}[{body}].{N2W[comp]}"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = read_rows(sys.argv[1])
    factors = {}
    for kind, label, _ in rows:
        if kind == "aux" and len(label) == 3 and label[0][0] in "yz":
            key = (label[0][0], label[1])
            factors[key] = max(factors.get(key, 0), int(label[0][1:]))
    pair = [paired_unknown(k, l, factors) for k, l, _ in rows]
    row_of = {p: i for i, p in enumerate(pair) if p is not None}
    pattern = {(i, c) for i, (_, _, cols) in enumerate(rows) for c in cols}
    missing, unpaired = [], set()
    for i, c in sorted(pattern):
        if c not in row_of or pair[i] is None:
            unpaired.add(c if c not in row_of else " ".join(rows[i][1]))
            continue
        if (row_of[c], pair[i]) not in pattern:
            missing.append((i, c))
    for i, c in missing[:8]:
        j = row_of[c]
        print(f"no mirror: row ({rows[i][0]}) {' '.join(rows[i][1])}, {c}: row ({rows[j][0]}) {' '.join(rows[j][1])} has no {pair[i]}")
    print(f"entries {len(pattern)}, without a mirror {len(missing)}, outside the pairing {len(unpaired)}"
          + (f" ({', '.join(sorted(unpaired)[:6])}{', ...' if len(unpaired) > 6 else ''})" if unpaired else ""))


if __name__ == "__main__":
    main()
