"""generated_names.py: a generated solver's text with the work struct's values named by their
nodes again, for the scripts that read generated code (scripts/resplit.py,
bench/profile/reroll_census.py).

The emitter names a value that crosses parts as an element of the NAME_work struct's array `t` or
`kept` (compiler/src/layout.hpp, Layout::member and Layout::stage), in a part often through one of
its windows `w0`, `w1`, ... (`T* const w0 = nelu::window(w.t + 80);`, printer.hpp Form::windows),
and comments each assignment with its node (`w0[-3] = ...;  // t1205: ...`). unwindow() resolves
the windows, drops their declarations, and names every element of `t` by its node (`w.t1205`, a
member `T t1205;` of the struct); the elements of `kept` stay `w.kept[k]` (the entry point reads
that array as a whole). Each work struct numbers its own elements, and so does each variant of a
file (`#if NELU_LANE_BYTES` ... `#else`)."""
import re

_DECL = re.compile(r"^    \w+\* const (w\d+) = nelu::window\(w\.(t|kept) \+ (\d+)\);\n", re.M)
_USE = re.compile(r"\b(w\d+)\[(-?\d+)\]")
_ASSIGN_T = re.compile(r"^    w\.t\[(\d+)\] = .*;  // t(\d+)", re.M)
_STRUCT = re.compile(r"\b(\w+_work)\b")


def unwindow(text: str) -> str:
    chunks, keys, region = [], [], 0
    for chunk in re.split(r"(?m)^(?=\S)", text):  # top-level declarations: each function on its own
        if chunk.startswith("#if") or chunk.startswith("#else") or chunk.startswith("#endif"):
            region += 1
        bases = {m.group(1): (m.group(2), int(m.group(3))) for m in _DECL.finditer(chunk)}
        if bases:
            chunk = _DECL.sub("", chunk)
            chunk = _USE.sub(lambda m: f"w.{bases[m.group(1)][0]}[{bases[m.group(1)][1] + int(m.group(2))}]"
                             if m.group(1) in bases else m.group(0), chunk)
        struct = _STRUCT.search(chunk)
        chunks.append(chunk)
        keys.append((region, struct.group(1) if struct else None))
    members = {}  # (region, struct) -> element -> node
    for chunk, key in zip(chunks, keys):
        members.setdefault(key, {}).update(_ASSIGN_T.findall(chunk))
    out = []
    for chunk, key in zip(chunks, keys):
        member = members.get(key, {})
        chunk = re.sub(r"^(    w\.t\[\d+\] = .*;)  // t\d+(?::? ?)", r"\1  // ", chunk, flags=re.M)
        chunk = re.sub(r"\bw\.t\[(\d+)\]", lambda m: "w.t" + member[m.group(1)], chunk)
        chunk = re.sub(r"^    T t\[\d+\];.*$", lambda m: "\n".join(f"    T t{n};" for n in member.values()), chunk, flags=re.M)
        out.append(re.sub(r"  // $", "", chunk, flags=re.M))
    return "".join(out)
