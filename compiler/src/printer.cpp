// printer.cpp: see printer.hpp.
#include "printer.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "nelu/mimic.hpp"

namespace nelu::emit {
namespace {

using ir::Id;
using ir::Op;

/// Workspace form: statements between two reloads of the workspace pointer. The compiler cannot
/// tell that the reloaded pointer is the same, so it keeps no value in a register (or a spill
/// slot) past a reload: the stack holds at most this many statements' values.
constexpr std::size_t kWorkspaceChunk = 16;

const char* kLaneTemplate = "template <class T, class V = nelu::lanes::Vec<T>, class M = nelu::lanes::Mask<T>>\n";

/// How a lane kernel reads a scalar operand from the broadcast table `s` (nelu/lanes.hpp, Splats),
/// and whether printed lane code reads one: the table and its parameter are declared or marked
/// used accordingly (an unused variable breaks -Werror builds).
const char* kSplatRead = "nelu::lanes::splat<C>(s, ";
bool reads_splats(const std::string& code) { return code.find(kSplatRead) != std::string::npos; }

/// What the outputs block names: the outputs, and the Jacobian of a derivatives entry point.
const char* outputs_named(const Layout& L) { return L.jac.empty() ? "" : " and their Jacobian"; }

/// The divider of the phase node x belongs to (the schedule numbers the nodes phase by phase).
const char* phase_of(const Factorization& f, Id x) {
    return x < f.first_factor_node ? "kinematics: transforms, velocities, bias terms b"
           : x < f.first_solve_node ? "factorization of P D Q = L U"
                                    : "solve: forward and back substitution";
}

}  // namespace

std::string number(double v) { return fmt::format("{:.17g}", v); }

Form::Form(const Layout& layout, const EmitInput& in, const Notes& n)
    : L(layout), f(*in.factorization), P(in.factorization->prog), notes(n) {
    // the program reads q and qd in the full model's slots; the functions take only the
    // independent coordinates
    const Model& m = in.load->model;
    q_arg.assign(m.nq, -1), v_arg.assign(m.nv, -1);
    const std::vector<int> qs = independent_q_slots(m), vs = independent_v_slots(m);
    for (std::size_t a = 0; a < qs.size(); ++a) q_arg[qs[a]] = static_cast<int>(a);
    for (std::size_t a = 0; a < vs.size(); ++a) v_arg[vs[a]] = static_cast<int>(a);
}

std::string Form::statements(std::size_t p, const char*& phase) {
    std::string s;
    const std::size_t lo = L.part_begin(p), hi = L.part_end(p);
    for (std::size_t k = lo; k < hi; ++k) {
        const Id i = L.stmts[k];
        if (defer(k)) continue;
        const std::string waiting = flush_for(P.node(i));
        if (!waiting.empty()) s += waiting, phase = nullptr;
        s += before(k - lo);
        const char* now = phase_of(f, i);
        if (now != phase || k == lo) s += fmt::format("    // --- {}\n", now), phase = now;
        s += statement(k);
        auto chk = L.checks.find(i);
        if (chk == L.checks.end()) continue;
        std::set<std::string> tests;  // a part runs to its end (every workspace value it owns is set), then reports
        for (const ScheduledPivot* pv : chk->second)
            if (pv->threshold > 0) tests.insert(pivot_test(i, *pv));
        for (const std::string& t : tests) s += on_pivot_test(t);
    }
    return s + flush();
}

void Form::choose_windows(std::size_t p, const char* phase) {
    std::map<std::pair<int, int>, int> uses;  // (array, element) -> its reads and writes in the part
    tally = &uses;
    (void)statements(p, phase);  // (the forms that use windows print without side effects)
    tally = nullptr;
    std::vector<std::pair<int, Window>> cover;  // windows from each part's first element not yet covered
    for (auto it = uses.begin(); it != uses.end();) {
        const Window w{it->first.first, it->first.second};
        int n = 0;
        for (; it != uses.end() && it->first.first == w.array && it->first.second < w.first + kWindow; ++it) n += it->second;
        if (n >= kWindowUses) cover.push_back({n, w});
    }
    std::stable_sort(cover.begin(), cover.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    cover.resize(std::min<std::size_t>(cover.size(), kWindows));
    for (const auto& [n, w] : cover) windows.push_back(w);
}

std::string Form::work_element(int array, int e) const {
    if (tally) ++(*tally)[{array, e}];
    for (std::size_t k = 0; k < windows.size(); ++k)
        if (windows[k].array == array && e >= windows[k].first && e < windows[k].first + kWindow)
            return fmt::format("w{}[{}]", k, e - window_base(windows[k]));
    return fmt::format(array == 0 ? "{}.t[{}]" : "{}.kept[{}]", work, e);
}

int Form::window_base(const Window& w) const {
    const int size = w.array == 0 ? L.members : static_cast<int>(L.staged.size());
    return std::min(w.first + kWindow / 2, size);  // (at most one past the end: a pointer C++ allows)
}

std::string Form::window_pointers() const {
    std::string s;
    for (std::size_t k = 0; k < windows.size(); ++k)
        s += fmt::format("    {}* const w{} = nelu::window(w.{} + {});\n", value_type(), k, windows[k].array == 0 ? "t" : "kept",
                         window_base(windows[k]));
    return s;
}

std::string Form::functions() {
    std::string s;
    const char* phase = nullptr;
    for (std::size_t p = 0; p < L.parts; ++p) {
        s += split() ? open_part(p) : open_whole();
        if (split() && windowed()) choose_windows(p, phase), s += window_pointers();
        s += statements(p, phase);
        windows.clear();
        s += split() ? close_part() : outputs() + "}\n\n";
    }
    if (split()) {
        const std::vector<std::vector<std::size_t>> blocks = L.lanes ? lane_blocks(f) : std::vector<std::vector<std::size_t>>{};
        for (std::size_t b = 0; b < blocks.size(); ++b) {  // each block a function of its own, reading the work struct
            const std::string body = lane_block(blocks[b], "    ");
            // (a block whose kernel reads no operand of the model, or that has no kernel, leaves splats unread)
            const char* unread = reads_splats(body) ? "" : ", (void)splats";
            s += fmt::format("template <class T>\n{3}bool {0}_lanes{1}(const T* q, const T* qd, const T* in, const {0}_work<T>& ws,\n"
                             "{5:{4}}const {6}& splats, T* jac) {{\n"
                             "    (void)q, (void)qd, (void)in, (void)ws{7};\n    bool ok = true;\n{2}    return ok;\n}}\n\n",
                             L.fn, b, body, part_attributes(), fmt::format("bool {}_lanes{}(", L.fn, b).size(), "", splats_type(), unread);
        }
        s += open_caller();
        for (std::size_t p = 0; p < L.parts; ++p) s += call_part(p);
        s += outputs() + "}\n\n" + close_caller();
    }
    return s;
}

std::string Form::name(Id x) const {
    if (!L.shared[x]) return fmt::format("t{}", x);
    if (placed(x)) {
        const std::size_t e = static_cast<std::size_t>(L.place[x]);
        return e < L.out.size() ? fmt::format("w.out[{}]", e) : fmt::format("w.jac[{}]", e - L.out.size());
    }
    if (!L.work_slot.empty() && L.work_slot[x] >= 0) return fmt::format("w.v[{}]", L.work_slot[x]);
    return staged(x) ? work_element(1, L.stage[x]) : work_element(0, L.member[x]);
}

bool Form::staged(Id x) const { return staged_names() && L.stage[x] >= 0; }

bool Form::placed(Id x) const { return !L.place.empty() && L.place[x] >= 0; }

std::vector<Id> Form::unstaged(const std::vector<Id>& xs) const {
    std::vector<Id> r;
    for (Id x : xs)
        if (!staged(x)) r.push_back(x);
    return r;
}

std::size_t Form::staged_run(const std::vector<Id>& xs, std::size_t k, const std::function<bool(std::size_t)>& skip) const {
    if (!staged(xs[k])) return 0;
    std::size_t n = 1;
    while (k + n < xs.size() && !skip(k + n) && staged(xs[k + n]) && L.stage[xs[k + n]] == L.stage[xs[k]] + static_cast<int>(n)) ++n;
    return n;
}

std::string Form::declare(Id x) const { return L.shared[x] ? name(x) : fmt::format("const {} t{}", value_type(), x); }

std::string Form::operand(Id x) const {
    const ir::Node& n = P.node(x);
    if (n.op == Op::Const) return "T(" + number(n.value) + ")";  // in lanes, broadcast by the operation
    if (n.op != Op::Input) return name(x);
    if (n.source == ir::Source::Q) return fmt::format("q[{}]", q_arg.at(n.index));
    if (n.source == ir::Source::Qd) return fmt::format("qd[{}]", v_arg.at(n.index));
    return fmt::format("in[{}]", n.index);
}

std::string Form::statement(std::size_t k) const {
    const ir::Node& n = P.node(L.stmts[k]);
    // sin, cos and sqrt from <cmath> (scalar) or the lanes; the rotation logs from the runtime (trig.hpp, lanes.hpp)
    const bool std_math = n.op == Op::Sin || n.op == Op::Cos || n.op == Op::Sqrt;
    const std::string rhs = ir::spelled(n.op, operand(n.a), n.b >= 0 ? operand(n.b) : std::string(),
                                        ir::is_arithmetic(n.op) ? "" : std_math ? math() : runtime_math());
    return assign(L.stmts[k], rhs);
}

std::string Form::assign(Id x, const std::string& rhs) const {
    auto note = notes.find(x);
    std::string comment = note == notes.end() ? "" : note->second;
    // a value in the work struct or in place, an element of an array: its node, as nelu analyze --dump ir names it
    if (staged(x) || placed(x) || (!L.member.empty() && L.member[x] >= 0))
        comment = fmt::format("t{}{}", x, comment.empty() ? "" : ": " + comment);
    return fmt::format("    {} = {};{}\n", declare(x), rhs, comment.empty() ? "" : "  // " + comment);
}

std::string Form::outputs() const {
    if (!L.place.empty()) {  // (a batch form: its parts wrote each output in place) the other entries, then one test of all
        const std::size_t no = L.out.size();
        std::string s = writes("out", L.out, [&](std::size_t k) { return L.place[L.out[k]] == static_cast<int>(k); });
        s += writes("jac", L.jac, [&](std::size_t k) { return L.place[L.jac[k]] == static_cast<int>(no + k); });
        s += fmt::format("    // --- outputs{}, every lane's; its status says whether they are finite\n", outputs_named(L));
        s += fmt::format("    M fin = nelu::lanes::all_finite<T>(out, {});\n", no);
        if (!L.jac.empty()) s += fmt::format("    fin &= nelu::lanes::all_finite<T>(jac, {});\n", L.jac.size());
        return s + give_status();
    }
    std::vector<Id> values;  // each value once (a symmetric matrix repeats half of them); constants are finite
    std::set<Id> tested;
    for (Id o : L.kept())  // (with lanes: what the kernels read, so that only an overflow in them is left)
        if (!P.is_const(o) && tested.insert(o).second) values.push_back(o);
    std::string s = finite_check(values);
    if (L.lanes) {
        s += "    // --- the Jacobian's columns in lanes, W at a time: a column that overflows returns NELU_STATUS_NOT_FINITE\n"
             "    //     with out untouched and jac partly written (docs/derivatives.md, \"Columns in lanes\")\n    bool ok = true;\n";
        // the kernels' scalar operands, broadcast once for all of them where the target wants it
        // (nelu/lanes.hpp, Splats): in the work struct when there is one
        // ([[maybe_unused]] where no kernel reads an operand of the model: its table is then empty)
        const char* unused = L.splats.empty() ? "[[maybe_unused]] " : "";
        s += split() ? fmt::format("    {}{}& splats = w.splats;\n", unused, splats_type()) : fmt::format("    {}{} splats;\n", unused, splats_type());
        for (std::size_t e = 0, n = 1; e < L.splats.size(); e += n) {  // runs of staged values in a loop
            n = staged_run(L.splats, e);
            if (n >= 4)
                s += fmt::format("    splats.put_run({}, w.kept + {}, {});\n", e, L.stage[L.splats[e]], n);
            else
                n = 1, s += fmt::format("    splats.put({}, {});\n", e, operand(L.splats[e]));
        }
        const std::vector<std::vector<std::size_t>> blocks = lane_blocks(f);
        for (std::size_t b = 0; b < blocks.size(); ++b)
            s += split() ? fmt::format("    ok = {}_lanes{}<T>(q, qd, in, w, splats, jac) && ok;\n", L.fn, b)
                         : "    {\n" + lane_block(blocks[b], "        ") + "    }\n";
        s += "    if (!ok) return NELU_STATUS_NOT_FINITE;\n";
    }
    s += writes("out", L.out, [](std::size_t) { return false; });
    s += writes("jac", L.jac, [&](std::size_t k) { return L.lanes && L.jac_in_lanes[k]; });
    return s + give_status();
}

std::string Form::writes(const char* array, const std::vector<Id>& xs, const std::function<bool(std::size_t)>& skip) const {
    std::string s;
    for (std::size_t k = 0; k < xs.size();) {
        if (skip(k)) {
            ++k;
            continue;
        }
        const Id x = xs[k];
        std::size_t n = staged_run(xs, k, skip);  // the run from k: entries staged one after the other, or one constant
        if (n == 0)
            for (n = 1; P.is_const(x) && k + n < xs.size() && !skip(k + n) && xs[k + n] == x;) ++n;
        if (staged(x) && n >= 2)
            s += fmt::format("    std::memcpy({0} + {1}, w.kept + {2}, {3} * sizeof *{0});  // {0}[{1}..{4}]\n", array, k, L.stage[x], n, k + n - 1);
        else if (n >= 4)
            s += fmt::format("    for (int e = {1}; e < {2}; ++e) {0}[e] = {3};\n", array, k, k + n, output(x));
        else
            n = 1, s += fmt::format("    {}[{}] = {};\n", array, k, output(x));
        k += n;
    }
    return s;
}

std::string Form::lane_block(const std::vector<std::size_t>& block, const char* in) const {
    // (in parts, a block is a function whose parameter `ws` is the work struct; its loop names it `w`)
    struct Named {
        const Form& f;
        const char* was;
        Named(const Form& form, const char* name) : f(form), was(form.work) { f.work = name; }
        ~Named() { f.work = was; }
    } outside(*this, split() ? "ws" : work);
    const int kernel = f.lane_groups[block.front()].kernel;  // (every group of the block has it)
    const LaneKernel& K = f.lane_kernels[static_cast<std::size_t>(kernel)];
    const KernelProgram& kp = L.lane_programs[static_cast<std::size_t>(kernel)];
    struct Column {
        const LaneGroup* G;
        std::size_t c;  // its place in G
        std::size_t jac(std::size_t o, std::size_t nc) const { return o * nc + static_cast<std::size_t>(G->columns[c]); }
        Id rhs(std::size_t row) const { return G->rhs[row * G->columns.size() + c]; }
        Id extra(std::size_t o) const { return G->extra[o * G->columns.size() + c]; }
    };
    std::vector<Column> columns;  // the block's, group after group
    for (std::size_t g : block)
        for (std::size_t c = 0; c < f.lane_groups[g].columns.size(); ++c) columns.push_back({&f.lane_groups[g], c});
    const std::size_t n = columns.size(), rows = K.rows.size(), no = L.out.size(), nc = L.jac.size() / std::max<std::size_t>(no, 1);
    const std::vector<bool>& dep = L.lane_dep;
    std::string cols;
    for (const Column& c : columns) cols += fmt::format("{}{}", cols.empty() ? "" : ", ", c.G->columns[c.c]);
    bool any_input = false, any_output = false;  // (a kernel none of whose outputs reads its inputs is left out)
    for (bool r : kp.row_read) any_input = any_input || r;
    for (Id x : K.outputs) any_output = any_output || dep[x];
    if (!any_input || !any_output) {
        std::string t;
        for (std::size_t o = 0; o < no; ++o)
            for (const Column& c : columns) {
                const std::size_t e = c.jac(o, nc);
                std::string v = operand(K.outputs[o]);
                if (c.extra(o) != P.zero()) v += " + " + operand(c.extra(o));
                t += fmt::format("{}jac[{}] = {};\n{}ok = ok && std::isfinite(jac[{}]);\n", in, e, v, in, e);
            }
        return t;
    }
    // the kernel over the block's columns (nelu/lanes.hpp, Block): its inputs the right-hand sides'
    // rows (an array of rows of the block's lanes), its statements straight-line code over one
    // vector of the target's lanes (a scalar operand is broadcast), run in a loop over the block's
    // lanes, its outputs to an array of rows and from there into jac
    std::map<Id, std::size_t> row_of;
    for (std::size_t i = 0; i < rows; ++i) row_of[K.inputs[i]] = i;
    std::string rhs_rows;
    std::vector<std::size_t> rhs_row(rows, 0);  // per row of the pattern that the kernel reads: its row of rhs
    std::vector<int> in_place(rows, -1);          // or its first element of w.kept, where the row lies there
    std::size_t read = 0;
    for (std::size_t i = 0; i < rows; ++i) {
        if (!kp.row_read[i]) continue;
        std::vector<Id> row(n);
        for (std::size_t c = 0; c < n; ++c) row[c] = columns[c].rhs(i);
        // a row of consecutive elements of w.kept (Layout::lane_rhs), as wide as the block's lanes
        // for float and double (4 or 8 columns, Block): loaded from there
        if ((n == 4 || n == 8) && staged_run(row, 0) == n) {
            in_place[i] = L.stage[row[0]];
            continue;
        }
        std::string values;
        for (std::size_t c = 0; c < n; ++c) values += (c ? ", " : "") + operand(row[c]);
        rhs_rows += fmt::format("{}    {{{}}},  // l{}\n", in, values, i);
        rhs_row[i] = read++;
    }
    auto kernel_operand = [&](Id x) {
        const Named inside(*this, "w");
        if (!dep[x] && P.is_const(x)) return operand(x);
        if (!dep[x]) return fmt::format("{}{}, {})", kSplatRead, L.splat_of.at(x), operand(x));
        auto it = row_of.find(x);
        if (it == row_of.end() && P.node(x).op == Op::Input)  // (schedule.cpp lanes_kept_apart)
            throw std::logic_error(fmt::format("lane kernel {} reads the lane input of row {}, not one of its rows", kernel, P.node(x).index));
        return it != row_of.end() ? fmt::format("l{}", it->second) : fmt::format("k{}", x);
    };
    // each row loaded just before its first reader (what is live is then what the kernel computes)
    std::string body;
    std::vector<bool> loaded(rows, false);
    auto load_rows = [&](std::initializer_list<Id> xs) {
        for (Id x : xs) {
            auto it = x >= 0 && dep[x] ? row_of.find(x) : row_of.end();
            if (it == row_of.end() || loaded[it->second]) continue;
            loaded[it->second] = true;
            const int at = in_place[it->second];
            body += at >= 0 ? fmt::format("{}    const C l{} = nelu::lanes::load_vector<C>(w.kept + {} + h);\n", in, it->second, at)
                            : fmt::format("{}    const C l{} = nelu::lanes::load_cols<C>(rhs[{}] + h);\n", in, it->second, rhs_row[it->second]);
        }
    };
    for (Id i : kp.statements) {
        const ir::Node& nd = P.node(i);
        load_rows({nd.a, nd.b});
        if (!ir::is_arithmetic(nd.op)) throw std::logic_error("a lane kernel computes more than a solve");
        const std::string rhs = ir::spelled(nd.op, kernel_operand(nd.a), nd.b >= 0 ? kernel_operand(nd.b) : std::string());
        body += fmt::format("{}    const C k{} = {};\n", in, i, rhs);
    }
    // the outputs to res, their finiteness in lanes: z sums x - x over them (0 where every one is
    // finite, NaN else); then into jac, and what a column adds beyond the kernel (a combination's
    // terms free of dx). The block's columns in runs of consecutive columns of jac: one memcpy a run
    // and output. A pass of the loop stores into jac itself where its columns are consecutive there:
    // for every pass where the block is one run as wide as its lanes (4 or 8 columns: as wide for
    // float and double, Block), and where the runs' bounds fall on the passes' bounds, for the
    // targets whose passes are that narrow (`fit`: the widest pass, a power of two, for which they
    // do; say SSE2's two double columns a pass over runs of 6 and 2 columns); res only where not
    std::vector<std::pair<std::size_t, std::size_t>> runs;  // (first place in the block, columns)
    for (std::size_t c = 0; c < n; ++c)
        if (c > 0 && columns[c].jac(0, nc) == columns[c - 1].jac(0, nc) + 1)
            ++runs.back().second;
        else
            runs.push_back({c, 1});
    std::size_t fit = 0;  // (a pass never crosses n: the lanes are n, a power of two, in every form that fits)
    if ((n & (n - 1)) == 0)
        for (std::size_t s = 2; s <= n; s *= 2) {  // (a pass is 16 bytes at least: two columns)
            bool consecutive = true;
            for (std::size_t c = 1; c < n; ++c)
                consecutive = consecutive && (c % s == 0 || columns[c].jac(0, nc) == columns[c - 1].jac(0, nc) + 1);
            if (!consecutive) break;
            fit = s;
        }
    const bool direct = fit == n && n >= 4;  // (one run, its lanes n for float and double: every pass on every target)
    const std::string copy_in = fit > 0 ? std::string(in) + "    " : std::string(in);  // (the copies under if constexpr)
    std::string z, to_jac, after;
    std::size_t results = 0;
    for (std::size_t o = 0; o < no; ++o) {
        const Id ko = K.outputs[o];
        if (dep[ko]) {
            load_rows({ko});
            const std::string k = kernel_operand(ko);
            if (direct)
                body += fmt::format("{}    nelu::lanes::store_cols(jac + {} + h, {});\n", in, columns[0].jac(o, nc), k);
            else if (fit > 0)
                body += runs.size() == 1
                            ? fmt::format("{}    nelu::lanes::store_cols(direct ? jac + {} + h : res[{}] + h, {});\n", in, columns[0].jac(o, nc), results, k)
                            : fmt::format("{}    nelu::lanes::store_cols(direct ? jac + {} + at[h] : res[{}] + h, {});\n", in, o * nc, results, k);
            else
                body += fmt::format("{}    nelu::lanes::store_cols(res[{}] + h, {});\n", in, results, k);
            z += fmt::format("{}({} - {})", z.empty() ? "" : " + ", k, k);
            if (!direct)
                for (const auto& [c, len] : runs) {
                    const std::size_t e = columns[c].jac(o, nc);
                    to_jac += len == 1 ? fmt::format("{}jac[{}] = res[{}][{}];\n", copy_in, e, results, c)
                                       : fmt::format("{}std::memcpy(jac + {}, res[{}] + {}, {} * sizeof(T));\n", copy_in, e, results, c, len);
                }
        }
        for (std::size_t c = 0; c < n; ++c) {
            const Id extra = columns[c].extra(o);
            const std::size_t e = columns[c].jac(o, nc);
            if (dep[ko] && extra == P.zero()) continue;
            const std::string v = dep[ko] ? fmt::format("jac[{}]", e) : operand(ko);
            after += fmt::format("{0}jac[{1}] = {2}{3};\n{0}ok = ok && std::isfinite(jac[{1}]);\n", in, e, v,
                                 extra == P.zero() ? "" : " + " + operand(extra));
        }
        results += dep[ko] && !direct;
    }
    if (!z.empty()) body += fmt::format("{}    finite = finite && nelu::lanes::finite_cols({});\n", in, z);
    const bool splats = reads_splats(body);
    std::string res_decl = results ? fmt::format("{}T res[{}][B::lanes];\n", in, results) : std::string();
    if (fit > 0 && results) {  // the passes that store into jac (the target's width decides), res for the others
        std::string lane_jac;    // (each lane's column of jac)
        for (std::size_t c = 0; c < n; ++c) lane_jac += fmt::format("{}{}", c ? ", " : "", columns[c].jac(0, nc));
        res_decl = fmt::format("{0}constexpr bool direct = {1};  // each pass into jac\n"
                               "{2}"
                               "{0}[[maybe_unused]] T res[{3}][B::lanes];\n",
                               in, fmt::format("B::lanes == {} && B::step <= {}", n, fit),
                               runs.size() == 1 ? std::string() : fmt::format("{}static constexpr std::size_t at[] = {{{}}};  // the Jacobian's column of each lane\n", in, lane_jac),
                               results);
        to_jac = fmt::format("{0}if constexpr (!direct) {{\n{1}{0}}}\n", in, to_jac);
    }
    return fmt::format("{0}// columns {1} of the Jacobian: {2} right-hand side{3} on {4} rows through the kernel, in lanes\n"
                       "{0}using B = nelu::lanes::Block<T, {2}>;\n"
                       "{0}using C = typename B::V;\n"
                       "{5}"
                       "{6}"
                       "{0}bool finite = true;\n"
                       "{10}"
                       "{12}"
                       "{0}for (int h = 0; h < B::lanes; h += B::step) {{  // (once with lanes as wide as the block)\n"
                       "{0}    nelu::lanes::keep_loop<B>(h);\n"
                       "{11}"
                       "{13}"
                       "{7}"
                       "{0}}}\n"
                       "{0}ok = ok && finite;\n"
                       "{8}{9}",
                       in, cols, n, n == 1 ? "" : "s", rows,
                       read ? fmt::format("{0}const T rhs[{1}][B::lanes] = {{\n{2}{0}}};\n", in, read, rhs_rows) : std::string(),
                       res_decl, body,
                       to_jac, after,
                       // in parts, the work struct's pointer hidden too (its values are not locals)
                       split() ? fmt::format("{}const auto* const work = &ws;\n", in) : std::string(),
                       split() ? fmt::format("{}    const auto& w = *nelu::lanes::opaque(work);\n", in) : std::string(),
                       // the broadcast operands' table, where the kernel reads one (a kernel of constants and
                       // right-hand sides alone does not: an unused variable would break -Werror builds)
                       splats ? fmt::format("{}const auto* const table = &splats;\n", in) : std::string(),
                       splats ? fmt::format("{}    const auto& s = *nelu::lanes::opaque(table);\n", in) : std::string());
}

// --- ScalarForm

std::string ScalarForm::statement(std::size_t k) const {
    const Id i = L.stmts[k];
    const ir::Node& n = P.node(i);
    const char part = n.op == Op::Sin ? 's' : 'c';
    if (L.sincos_first.count(i))  // a sine and cosine side by side (layout): one nelu::sincos
        return fmt::format("    const nelu::SinCos<T> sc{} = nelu::sincos({});\n", i, operand(n.a)) + assign(i, fmt::format("sc{}.{}", i, part));
    if (L.pairs_with_previous(k)) return assign(i, fmt::format("sc{}.{}", L.stmts[k - 1], part));
    return Form::statement(k);
}

std::string ScalarForm::pivot_test(Id x, const ScheduledPivot& pv) const {
    if (pv.kind == PivotKind::Lambda)  // signed, and per precision
        return fmt::format("{0} >= (sizeof(T) == sizeof(float) ? T({1}) : T({2}))", name(x), number(pv.threshold_float), number(pv.threshold));
    return fmt::format("std::fabs({}) >= T({})", name(x), number(pv.threshold));
}

std::string ScalarForm::on_pivot_test(const std::string& test) const {
    return fmt::format(split() ? "    if (!({})) status = NELU_STATUS_SMALL_PIVOT;\n" : "    if (!({})) return NELU_STATUS_SMALL_PIVOT;\n", test);
}

std::string ScalarForm::open_whole() const {
    return fmt::format("template <class T>\nint {}_impl(const T* q, const T* qd, const T* in, T* out{}) {{\n    (void)q, (void)qd, (void)in;\n",
                       function(), L.jac.empty() ? "" : ", T* jac");
}

std::string ScalarForm::open_part(std::size_t p) const {
    return fmt::format("template <class T>\n{}int {}_part{}(const T* q, const T* qd, const T* in, {}) {{\n"
                       "    (void)q, (void)qd, (void)in, (void)w;\n    int status = NELU_STATUS_OK;\n",
                       part_attributes(), function(), p, work_parameter());
}

std::string ScalarForm::close_part() const { return "    return status;\n}\n\n"; }

std::string ScalarForm::open_caller() const {
    if (L.work_in_caller)  // NAME_run, on a work struct that NAME_impl keeps on its stack and NAME_ws_impl in the caller's memory
        return fmt::format("template <class T>\nint {0}_run(const T* q, const T* qd, const T* in, T* out{1}, {0}_work<T>& w) {{\n"
                           "    int status = NELU_STATUS_OK;\n",
                           L.fn, L.jac.empty() ? "" : ", T* jac");
    return fmt::format("template <class T>\nint {}_impl(const T* q, const T* qd, const T* in, T* out{}{}) {{\n{}    int status = NELU_STATUS_OK;\n",
                       function(), L.jac.empty() ? "" : ", T* jac", caller_parameter(), caller_work());
}

std::string ScalarForm::close_caller() const {
    if (!L.work_in_caller) return "";
    return fmt::format("template <class T>\nint {0}_impl(const T* q, const T* qd, const T* in, T* out{1}) {{\n"
                       "    {0}_work<T> w;\n    return {0}_run(q, qd, in, out{2}, w);\n}}\n\n",
                       L.fn, L.jac.empty() ? "" : ", T* jac", L.jac.empty() ? "" : ", jac");
}

std::string caller_work_impl(const Layout& L) {
    const char* jac = L.jac.empty() ? "" : ", jac";
    return fmt::format("/// {0}_ws: {0}_run on the caller's memory (its size checked against the header's).\n"
                       "template <class T>\nint {0}_ws_impl(const T* q, const T* qd, const T* in, T* out{1}, T* work) {{\n"
                       "    static_assert(sizeof({0}_work<T>) <= {2} * sizeof(T){4} && alignof({0}_work<T>) <= alignof(T), \"{0}_WORK_BYTES\");\n"
                       "    return {0}_run(q, qd, in, out{3}, *::new (static_cast<void*>(work)) {0}_work<T>);\n}}\n\n",
                       L.fn, L.jac.empty() ? "" : ", T* jac", L.caller_work_values, jac,
                       L.caller_splat_bytes ? fmt::format(" + {}", L.caller_splat_bytes) : std::string());
}

std::string ScalarForm::call_part(std::size_t p) const {
    return fmt::format("    if ((status = {}_part{}(q, qd, in, w)) != NELU_STATUS_OK) return status;\n", function(), p);
}

std::string ScalarForm::finite_check(const std::vector<Id>& values) const {
    std::vector<std::string> tests;  // the staged values in one loop (nelu/outputs.hpp), the others one by one
    if (staged_names()) tests.push_back("nelu::all_finite(w.kept)");
    for (Id x : unstaged(values)) tests.push_back(fmt::format("std::isfinite({})", operand(x)));
    std::string s = fmt::format("    // --- outputs{}: written only when every one is finite\n    if (!(", outputs_named(L));
    for (std::size_t k = 0; k < tests.size(); ++k)  // four to a line: a line of thousands of columns makes g++ drop column tracking
        s += (k == 0 ? "" : k % 4 == 0 ? " &&\n          " : " && ") + tests[k];
    return s + (tests.empty() ? "true" : "") + ")) return NELU_STATUS_NOT_FINITE;\n";
}

std::string ScalarForm::give_status() const { return "    return NELU_STATUS_OK;\n"; }

std::string ScalarForm::caller_work() const { return fmt::format("    {}_work<T> w;\n", L.fn); }

// --- WorkspaceForm

std::string WorkspaceForm::name(Id x) const { return fmt::format("w[{}]", L.slot[x]); }

std::string WorkspaceForm::before(std::size_t k) const { return k > 0 && k % kWorkspaceChunk == 0 ? "    w = reload;\n" : ""; }

std::string WorkspaceForm::open_part(std::size_t p) const {
    std::string s = ScalarForm::open_part(p);
    if (L.part_end(p) - L.part_begin(p) > kWorkspaceChunk)
        s += fmt::format("    T* volatile reload = w;  // w is read back from here every {} statements: values of earlier\n"
                         "                             // statements are then loaded from the workspace, not kept in registers or spilled\n",
                         kWorkspaceChunk);
    return s;
}

// --- LaneForm

std::string LaneForm::output(Id x) const { return P.is_const(x) ? "nelu::lanes::broadcast(" + operand(x) + ")" : operand(x); }

std::string LaneForm::pivot_test(Id x, const ScheduledPivot& pv) const {
    if (pv.kind == PivotKind::Lambda)  // signed, and per precision
        return fmt::format("nelu::lanes::below({0}, sizeof(T) == sizeof(float) ? T({1}) : T({2}))", name(x), number(pv.threshold_float),
                           number(pv.threshold));
    return fmt::format("nelu::lanes::small({}, T({}))", name(x), number(pv.threshold));
}

/// A sine-cosine pair waits until a statement reads it (the angles all come first), so that the
/// pairs of a part are computed in one call of nelu::lanes::sincos, which loads the kernel's
/// constants once for all of them.
bool LaneForm::defer(std::size_t k) {
    if (L.sincos_first.count(L.stmts[k])) {
        deferred_.push_back(k);
        return true;
    }
    return L.pairs_with_previous(k);
}

std::string LaneForm::flush_for(const ir::Node& reader) {
    for (std::size_t d : deferred_)
        for (Id x : {L.stmts[d], L.stmts[d + 1]})
            if (reader.a == x || reader.b == x) return flush();
    return "";
}

std::string LaneForm::flush() {
    if (deferred_.empty()) return "";
    const Id first = L.stmts[deferred_.front()];
    std::string angles;
    for (std::size_t d : deferred_) angles += (angles.empty() ? "" : ", ") + operand(P.node(L.stmts[d]).a);
    std::string s = fmt::format("    // --- sines and cosines of {1} angle{3} in one call\n    const V angle{0}[{1}] = {{{2}}};\n"
                                "    nelu::SinCos<V> sc{0}[{1}];\n    nelu::lanes::sincos(angle{0}, sc{0}, {1});\n",
                                first, deferred_.size(), angles, deferred_.size() == 1 ? "" : "s");
    for (std::size_t j = 0; j < deferred_.size(); ++j)
        for (std::size_t at : {deferred_[j], deferred_[j] + 1})
            s += assign(L.stmts[at], fmt::format("sc{}[{}].{}", first, j, P.node(L.stmts[at]).op == Op::Sin ? 's' : 'c'));
    deferred_.clear();
    return s;
}

std::string LaneForm::open_whole() const {
    return fmt::format("{}M {}_lanes_impl(const V* q, const V* qd, const V* in, V* out, V* jac) {{\n"
                       "    (void)q, (void)qd, (void)in, (void)jac;\n    M bad{{}};\n",
                       kLaneTemplate, L.fn);
}

std::string LaneForm::open_part(std::size_t p) const {
    return fmt::format("{0}void {1}_lanes_part{2}(const V* q, const V* qd, const V* in, {1}_work<V>& w, M& bad) {{\n"
                       "    (void)q, (void)qd, (void)in, (void)w, (void)bad;\n",
                       kLaneTemplate, L.fn, p);
}

std::string LaneForm::open_caller() const {
    const std::string place = L.place.empty() ? "" : L.jac.empty() ? "    w.out = out;\n" : "    w.out = out, w.jac = jac;\n";
    return fmt::format("{0}M {1}_lanes_impl(const V* q, const V* qd, const V* in, V* out, V* jac) {{\n    (void)jac;\n    {1}_work<V> w;\n{2}    M bad{{}};\n",
                       kLaneTemplate, L.fn, place);
}

std::string LaneForm::call_part(std::size_t p) const { return fmt::format("    {}_lanes_part{}<T>(q, qd, in, w, bad);\n", L.fn, p); }

std::string LaneForm::finite_check(const std::vector<Id>& values) const {
    std::string s = fmt::format("    // --- outputs{}, every lane's; its status says whether they are finite\n    M fin = ~M{{}};\n", outputs_named(L));
    if (staged_names()) s += "    for (const V& x : w.kept) fin &= nelu::lanes::finite(x);\n";
    const std::vector<Id> rest = unstaged(values);
    for (std::size_t k = 0; k < rest.size(); ++k)  // four to a line, as in the scalar form
        s += fmt::format("{}nelu::lanes::finite({}){}", k % 4 == 0 ? "    fin &= " : " & ", operand(rest[k]), k % 4 == 3 ? ";\n" : "");
    return s + (rest.size() % 4 != 0 ? ";\n" : "");
}

// --- files

std::string work_struct(const Layout& L) {
    if (L.parts <= 1) return "";
    std::string s = fmt::format("/// Values that cross from one part of the solver to a later one.\ntemplate <class T>\nstruct {}_work {{\n", L.fn);
    if (!L.work_slot.empty()) {
        if (L.work_slots > 0) s += fmt::format("    T v[{}];  // each element holds one value after another (Layout::work_slot)\n", L.work_slots);
    } else if (L.members > 0)
        s += fmt::format("    T t[{}];  // the other values that cross parts, in the order of their statements (Layout::member)\n", L.members);
    if (!L.place.empty())  // (Layout::place)
        s += L.jac.empty() ? "    T* out;  // the lanes of out, which the parts write in place\n"
                           : "    T* out;  // the lanes of out and jac, which the parts write in place\n    T* jac;\n";
    if (!L.staged.empty())  // (Layout::staged)
        s += fmt::format("    T kept[{}];  // what the entry point tests and writes, each value once (nelu/outputs.hpp)\n", L.staged.size());
    if (L.lanes)  // (Form::splats_type)
        s += fmt::format("    nelu::lanes::Splats<T, {}> splats;  // the lane kernels' scalar operands, broadcast (nelu/lanes.hpp)\n", L.splats.size());
    return s + "};\n\n";
}

std::string include_lines(const std::vector<std::unique_ptr<Form>>& forms) {
    std::set<std::string> system, own;
    for (const auto& form : forms)
        for (const std::string& h : form->includes()) (h.front() == '<' ? system : own).insert(h);
    std::string s;
    for (const std::string& h : system) s += "#include " + h + "\n";
    if (!system.empty()) s += "\n";
    for (const std::string& h : own) s += "#include \"" + h + "\"\n";
    if (!own.empty()) s += "\n";
    return s;
}

std::string program_text(const std::vector<std::unique_ptr<Form>>& forms) {
    std::string s;
    const Layout* last = nullptr;
    for (const auto& form : forms) {
        if (&form->layout() != last) s += work_struct(form->layout()), last = &form->layout();
        s += form->functions();
    }
    return s;
}

}  // namespace nelu::emit
