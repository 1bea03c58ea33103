#!/usr/bin/env python3
"""resplit.py: rewrite a generated solver NAME.cpp with a different split into parts, for the
experiments of docs/large-robots.md (the emitter itself is not changed).

    python3 scripts/resplit.py IN.cpp OUT.cpp --per-part K [--noinline] [--static-work]

Reads the statements of every part (or of the single _impl) in order, re-splits them into parts of
K statements (K = 0: one function, no work struct) with the emitter's rule (a value used in a
later part, or an output, lives in the work struct), and writes the same solver. --noinline
marks the parts __attribute__((noinline)); --static-work makes the work struct thread_local
static instead of a stack variable (not reentrant: an experiment only). OUT's directory must
hold NAME.hpp (copy it), the name is taken from IN. A sine and cosine of one angle that the
emitter computes in one nelu::sincos become two calls."""
import argparse
import re

from generated_names import unwindow


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--per-part", type=int, required=True)
    ap.add_argument("--noinline", action="store_true")
    ap.add_argument("--static-work", action="store_true")
    a = ap.parse_args()
    text = unwindow(open(a.src).read())  # (every element of the work struct's `t` named by its node again)
    # the values the entry point writes live in the work struct's array `kept` (Layout::staged), each
    # assignment naming its node in a comment: back to the names of their nodes
    kept = dict(re.findall(r"^    w\.kept\[(\d+)\] = .*;  // t(\d+)", text, re.M))
    text = re.sub(r"^(    w\.kept\[\d+\] = .*;)  // t\d+:? ?", r"\1  // ", text, flags=re.M)
    finite = " && ".join(f"std::isfinite(w.t{kept[str(k)]})" for k in range(len(kept)))
    text = text.replace("nelu::all_finite(w.kept)", finite or "true")

    def copies(m):  # a run of copies, one assignment per entry
        arr, b, k, n = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
        return "\n".join(f"    {arr}[{b + i}] = w.t{kept[str(k + i)]};" for i in range(n))
    text = re.sub(r"^    std::memcpy\((\w+) \+ (\d+), w\.kept \+ (\d+), (\d+) \* sizeof \*\w+\);.*$", copies, text, flags=re.M)
    text = re.sub(r"\bw\.kept\[(\d+)\]", lambda m: "w.t" + kept[m.group(1)], text)
    text = re.sub(r"  // $", "", text, flags=re.M)
    # a sine and cosine side by side (one nelu::sincos): each its own call, as the parts may split them
    angles = dict(re.findall(r"^    const nelu::SinCos<T> (sc\d+) = (nelu::sincos\(.*\));$", text, re.M))
    text = re.sub(r"^    const nelu::SinCos<T> sc\d+ = .*\n", "", text, flags=re.M)
    text = re.sub(r"\b(sc\d+)\.([sc])\b", lambda m: f"{angles[m.group(1)]}.{m.group(2)}", text)
    lines = text.split("\n")
    name = re.search(r"^int (\w+)_impl\(", text, re.M).group(1)
    head_end = next(i for i, l in enumerate(lines) if l.startswith("namespace {"))
    header = "\n".join(lines[:head_end])
    tail_start = next(i for i, l in enumerate(lines) if l.startswith("}  // namespace"))
    tail = "\n".join(lines[tail_start:])

    # statements: (text, defined id or None); checks attach to the statement before them
    stmts = []
    in_body = False
    outputs_block = []
    for l in lines[head_end:tail_start]:
        if re.match(r"^int \w+_(part\d+|impl)\(", l):
            in_body = True
            continue
        if not in_body:
            continue
        m = re.match(r"^    (?:const T |w\.)t(\d+) = (.*);(.*)$", l)
        if m:
            stmts.append([int(m.group(1)), re.sub(r"\bw\.t", "t", m.group(2)), m.group(3), []])
            continue
        if l.startswith("    if (!(") and "NELU_STATUS_SMALL_PIVOT" in l:
            cond = re.sub(r"\bw\.t", "t", l[len("    if (!("):l.rindex(")) ")])
            stmts[-1][3].append(cond)
            continue
        if l.startswith("    // --- outputs"):
            outputs_block = []
        # the test (four to a line, its continuation lines indented under it) and the writes (an
        # entry each, or a loop over a run of one constant)
        if l.startswith("    // --- outputs") or (outputs_block is not None and l.startswith(
                ("    if (!(std::isfinite", "    if (!(true", "    out[", "    for (int e", "          std::isfinite"))):
            outputs_block.append(l)
    outputs_block = [l for l in outputs_block if not l.startswith("    // ---")]
    out_ids = set()
    for l in outputs_block:
        out_ids.update(int(x) for x in re.findall(r"\bw?\.?t(\d+)\b", l))

    K = a.per_part if a.per_part > 0 else len(stmts)
    nparts = max(1, (len(stmts) + K - 1) // K)
    part = {s[0]: k // K for k, s in enumerate(stmts)}
    ref = re.compile(r"\bt(\d+)\b")
    shared = set()
    if nparts > 1:
        for s in stmts:
            for u in ref.findall(s[1]):
                u = int(u)
                if u in part and part[u] != part[s[0]]:
                    shared.add(u)
        shared |= {o for o in out_ids if o in part}

    def nm(i):
        return f"w.t{i}" if i in shared else f"t{i}"

    def subst(e):
        return ref.sub(lambda m: nm(int(m.group(1))) if int(m.group(1)) in part else m.group(0), e)

    o = [header, "namespace {", ""]
    if nparts > 1:
        o += ["template <class T>", f"struct {name}_work {{"] + [f"    T t{s[0]};" for s in stmts if s[0] in shared] + ["};", ""]
    attr = "__attribute__((noinline)) " if a.noinline else ""
    for p in range(nparts):
        o.append("template <class T>")
        if nparts > 1:
            o += [f"{attr}int {name}_part{p}(const T* q, const T* qd, const T* in, {name}_work<T>& w) {{",
                  "    (void)q, (void)qd, (void)in, (void)w;", "    int status = NELU_STATUS_OK;"]
        else:
            o += [f"int {name}_impl(const T* q, const T* qd, const T* in, T* out) {{", "    (void)q, (void)qd, (void)in;"]
        for s in stmts[p * K:(p + 1) * K]:
            lhs = f"w.t{s[0]}" if s[0] in shared else f"const T t{s[0]}"
            o.append(f"    {lhs} = {subst(s[1])};{s[2]}")
            for c in s[3]:
                c = subst(c)
                o.append(f"    if (!({c})) status = NELU_STATUS_SMALL_PIVOT;" if nparts > 1
                         else f"    if (!({c})) return NELU_STATUS_SMALL_PIVOT;")
        if nparts == 1:
            o += [re.sub(r"\bw\.t", "t", l) for l in outputs_block] + ["    return NELU_STATUS_OK;", "}", ""]
        else:
            o += ["    return status;", "}", ""]
    if nparts > 1:
        decl = f"    static thread_local {name}_work<T> w;" if a.static_work else f"    {name}_work<T> w;"
        o += ["template <class T>", f"int {name}_impl(const T* q, const T* qd, const T* in, T* out) {{", decl,
              "    int status = NELU_STATUS_OK;"]
        o += [f"    if ((status = {name}_part{p}(q, qd, in, w)) != NELU_STATUS_OK) return status;" for p in range(nparts)]
        o += [subst(re.sub(r"\bw\.t", "t", l)) for l in outputs_block] + ["    return NELU_STATUS_OK;", "}", ""]
    open(a.dst, "w").write("\n".join(o) + "\n" + tail)
    print(f"resplit: {len(stmts)} statements, {nparts} parts of <= {K}, {len(shared)} work values")


if __name__ == "__main__":
    main()
