#!/usr/bin/env python3
"""limb_pairing.py: how much of a generated solver two mirrored limbs could share in SIMD lanes
(docs/status.md, "Lanes across limbs: measured, not built").

    python3 bench/profile/limb_pairing.py DIR/NAME.cpp --map FR_=FL_ --map RR_=RL_

An SLP form of the scalar solver would put a statement of one limb and the same statement of the
mirrored limb in the two lanes of one SSE2 operation. This script measures what such a form could
pack at most. It reads the statements of NAME.cpp (the double path: every `tN = a op b;`) and
NAME.json (the manifest: which joint each q, qd and in entry belongs to), pairs the sine and cosine
of every joint with those of its image under --map (a substitution in joint names), and the q, qd
and in entries likewise, and then, in program order, pairs a statement with another whose operation
is the same and whose operands are the images of its own:

  - a paired value's partner, possibly negated (the IR folds signs into + and -: x + y in one limb
    is x' - y' in the other when y' = -y; a lane's sign flip costs one operation, counted);
  - the same unpaired value (a broadcast: the base's quantities that both limbs read);
  - any constant (the lanes' constants differ: a two-lane constant).

It prints the arithmetic statements, the pairs found, and the operations left if each pair were one
operation (pack and unpack not counted: an upper bound of the gain). A statement whose partner would
need other operands, or another operation, stays scalar, and so do the statements that read it.
"""
import argparse
import collections
import json
import re
import sys

STATEMENT = re.compile(r'^\s*(?:const T |w\.|)(t\d+) = (.*?);(\s*//.*)?$')
OPERAND = re.compile(r'(?:w\.)?(t\d+)|T\(([-0-9.e+]+)\)|(q|qd|in)\[(\d+)\]|sc\d+\.[sc]')
SINCOS = re.compile(r'\s*(?:const T |w\.)(t\d+) = sc\d+\.[sc];\s*//\s*(sin|cos) of joint (\S+)')


def read_program(path):
    """Statements of the double path, first definition of each value: {name: (op, [(kind, id)])}."""
    defs, order = {}, []
    for line in open(path):
        m = STATEMENT.match(line)
        if not m or m.group(1) in defs:
            continue
        lhs, rhs = m.group(1), m.group(2)
        parts = re.split(r'\s([-+*/])\s', rhs)

        def operand(text):
            text = text.strip()
            o = OPERAND.fullmatch(text)
            if not o:
                return ('?', text)
            if o.group(1):
                return ('v', o.group(1))
            if o.group(2):
                return ('C', None)
            if o.group(3):
                return ('I', (o.group(3), int(o.group(4))))
            return ('S', text)

        if len(parts) == 3:
            defs[lhs] = (parts[1], [operand(parts[0]), operand(parts[2])])
        else:
            defs[lhs] = ('mov', [operand(p) for p in parts])
        order.append(lhs)
    return defs, order


def image_of(name, maps):
    for a, b in maps:
        if a in name:
            return name.replace(a, b)
        if b in name:
            return name.replace(b, a)
    return None


def input_images(manifest, maps):
    """(array, index) -> (array, index) of the mirrored joint's entry."""
    images = {}
    for array in ('q', 'qd', 'in'):
        entries = manifest[array]
        keys = [json.dumps(e, sort_keys=True) for e in entries]
        where = collections.defaultdict(list)
        for k, key in enumerate(keys):
            where[key].append(k)
        for k, key in enumerate(keys):
            mirrored = image_of(key, maps)
            if mirrored is None or mirrored not in where:
                continue
            # the r-th entry of a joint (a floating base's components) maps to the r-th of its image
            r = where[key].index(k)
            if r < len(where[mirrored]):
                images[(array, k)] = (array, where[mirrored][r])
    return images


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('cpp', help='a generated NAME.cpp (NAME.json beside it)')
    ap.add_argument('--map', action='append', required=True, metavar='A=B',
                    help='joint-name substitution that maps a limb onto its mirror (repeatable)')
    args = ap.parse_args()
    maps = [tuple(m.split('=', 1)) for m in args.map]
    defs, order = read_program(args.cpp)
    manifest = json.load(open(re.sub(r'\.cpp$', '.json', args.cpp)))
    inputs = input_images(manifest, maps)

    pair = {}  # value -> (partner, sign): the partner's lane holds sign * the value's image
    by_joint = {}
    for line in open(args.cpp):
        m = SINCOS.match(line)
        if m:
            by_joint[(m.group(2), m.group(3))] = m.group(1)
    for (fn, joint), t in by_joint.items():
        mirrored = image_of(joint, maps)
        if mirrored and (fn, mirrored) in by_joint:
            pair[t] = (by_joint[(fn, mirrored)], 1)

    def image(kind, ident):
        """The operand the partner statement must read, and its sign."""
        if kind == 'v':
            return ('v', *pair[ident]) if ident in pair else ('v', ident, 1)
        if kind == 'I':
            return ('I', inputs.get(ident, ident), 1)
        return ('C', None, 1)

    users = collections.defaultdict(list)
    for n in order:
        for kind, ident in defs[n][1]:
            if kind in 'vI':
                users[ident].append(n)

    def matches(want, got):
        return got[0] == 'C' if want[0] == 'C' else (want[0] == got[0] and want[1] == got[1])

    pairs = flips = 0
    for n in order:
        op, operands = defs[n]
        if n in pair or op not in '+-*/' or len(operands) != 2:
            continue
        if not any((k == 'v' and i in pair) or (k == 'I' and i in inputs) for k, i in operands):
            continue
        A, B = image(*operands[0]), image(*operands[1])
        key = next(x[1] for x in (A, B) if x[0] in 'vI')
        found = None
        for c in users[key]:
            if c == n or c in pair or defs[c][0] not in '+-*/':
                continue
            cop, cargs = defs[c]
            for swapped in (False, True):
                X, Y = (B, A) if swapped else (A, B)
                if not (matches(X, cargs[0]) and matches(Y, cargs[1])):
                    continue
                if op in '*/':
                    if cop == op and not (swapped and op == '/'):
                        found = (c, A[2] * B[2], 0)
                elif swapped and op == '-':
                    continue  # (b - a against a - b: a sign flip of the result, not counted)
                else:  # a + b or a - b in one lane, the partner's + or - in the other
                    sb = B[2] if op == '+' else -B[2]
                    want = '+' if A[2] * sb > 0 else '-'
                    found = (c, A[2], int(cop != want))
                if found:
                    break
            if found:
                break
        if found:
            c, sign, flip = found
            pair[n], pair[c] = (c, sign), (n, sign)
            pairs += 1
            flips += flip
    arithmetic = sum(1 for n in order if defs[n][0] in '+-*/')
    left = arithmetic - pairs + flips
    print(f'{args.cpp}: {arithmetic} arithmetic statements, {pairs} pairs ({flips} with a sign flip), '
          f'{left} operations if each pair were one: {arithmetic / max(left, 1):.2f}x fewer')


if __name__ == '__main__':
    sys.exit(main())
