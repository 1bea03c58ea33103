// layout.cpp: see layout.hpp.
#include "layout.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "nelu/mimic.hpp"

namespace nelu::emit {
namespace {

using ir::Id;
using ir::Op;

bool is_trig(const ir::Node& n) { return n.op == Op::Sin || n.op == Op::Cos; }

/// The live statements in emission order: `order` (Order, layout.hpp), then every sine and cosine
/// (with the joint-angle sums they read) first: a call to sin/cos clobbers every vector register, so a
/// call in the middle of the solver spills whatever is live across it; at the top nothing else is live
/// yet. Measured on the shipped solvers (g++ -O3): the floating Mini Cheetah's float ID 318 -> 287 ns,
/// the Panda's 150 -> 141 ns; no solver slower. A stable partition: the order stays topological and
/// deterministic. Then the sine and cosine of one angle side by side, so that the source computes
/// them in one nelu::sincos (runtime trig.hpp): no libm call (docs/large-robots.md).
std::vector<Id> statements(const ir::Program& P, const std::vector<Id>& roots, Order order) {
    std::vector<Id> stmts;
    const std::vector<bool> live = P.live_nodes(roots);
    auto statement = [&](Id i) { return live[i] && P.node(i).op != Op::Const && P.node(i).op != Op::Input; };
    if (order == Order::program) {
        for (int i = 0; i < P.size(); ++i)
            if (statement(i)) stmts.push_back(i);
    } else {  // depth first from the roots in program order, each value's operands (a, then b) before it
        std::vector<Id> from = roots;
        std::sort(from.begin(), from.end());
        std::vector<bool> placed(P.size(), false);
        std::vector<std::pair<Id, int>> stack;  // (node, operands visited)
        for (Id r : from) {
            if (r < 0 || placed[r]) continue;
            stack.push_back({r, 0});
            while (!stack.empty()) {
                const Id x = stack.back().first;
                const int k = stack.back().second++;
                if (k < 2) {
                    const Id o = k == 0 ? P.node(x).a : P.node(x).b;
                    if (o >= 0 && !placed[o] && statement(o)) stack.push_back({o, 0});
                    continue;
                }
                stack.pop_back();  // (pushed only while unplaced, and no node is its own operand: placed once)
                placed[x] = true;
                if (statement(x)) stmts.push_back(x);
            }
        }
    }
    std::vector<bool> trig(P.size(), false);
    for (int i = P.size() - 1; i >= 0; --i) {
        const ir::Node& n = P.node(i);
        if (is_trig(n)) trig[i] = true;
        if (trig[i])
            for (Id o : {n.a, n.b})
                if (o >= 0) trig[o] = true;
    }
    std::stable_partition(stmts.begin(), stmts.end(), [&](Id x) { return trig[x]; });
    std::map<std::pair<int, Id>, Id> trig_of;  // (op, angle) -> node
    for (Id x : stmts)
        if (is_trig(P.node(x))) trig_of[{static_cast<int>(P.node(x).op), P.node(x).a}] = x;
    std::vector<Id> paired;
    std::vector<bool> placed(P.size(), false);
    for (Id x : stmts) {
        if (placed[x]) continue;
        paired.push_back(x), placed[x] = true;
        const ir::Node& n = P.node(x);
        if (!is_trig(n)) continue;
        auto other = trig_of.find({static_cast<int>(n.op == Op::Sin ? Op::Cos : Op::Sin), n.a});
        if (other != trig_of.end() && !placed[other->second]) paired.push_back(other->second), placed[other->second] = true;
    }
    return paired;
}

/// The lowest-free-slot scan over the emitted order, which both the workspace form's array
/// (allocate) and the batch forms' work struct (batch_memory) use: at each statement the operands
/// held (holds(o)) whose last reader it is (last[o]) give back their slot, then the statement, when
/// held, takes the lowest slot free, and gives it back at once when no later statement reads it (a
/// value only its own pivot test reads). on_take(x) follows each take, on_free(x) each give-back.
/// Returns the slots used: the most values held at once.
template <class Holds, class OnTake, class OnFree>
int scan_slots(const std::vector<Id>& stmts, const ir::Program& P, const std::vector<std::size_t>& last, Holds holds,
               std::vector<int>& slot, OnTake on_take, OnFree on_free) {
    slot.assign(P.size(), -1);
    std::set<int> free;
    int slots = 0;
    auto give = [&](Id x) { free.insert(slot[x]), on_free(x); };
    for (std::size_t k = 0; k < stmts.size(); ++k) {
        const Id x = stmts[k];
        const ir::Node& n = P.node(x);
        if (holds(n.a) && last[n.a] == k) give(n.a);
        if (n.b != n.a && holds(n.b) && last[n.b] == k) give(n.b);
        if (!holds(x)) continue;
        slot[x] = free.empty() ? slots++ : *free.begin();
        free.erase(slot[x]);
        on_take(x);
        if (last[x] == k) give(x);
    }
    return slots;
}

/// Liveness over the emitted order: the last statement that reads each value (its own, when only
/// its pivot test does; past the end for outputs). Then scan_slots gives each value the lowest
/// free workspace slot, and counts the values the ordinary form keeps on the stack at once.
void allocate(Layout& L, const ir::Program& P, const std::vector<int>& part) {
    const std::size_t end = L.stmts.size();
    std::vector<std::size_t> last(P.size(), 0);
    for (std::size_t k = 0; k < end; ++k) {
        last[L.stmts[k]] = k;
        for (Id o : {P.node(L.stmts[k]).a, P.node(L.stmts[k]).b})
            if (o >= 0 && part[o] >= 0) last[o] = k;
    }
    for (Id o : L.kept())
        if (part[o] >= 0) last[o] = end;
    long locals = 0, shared = 0;  // locals never cross a part: at a part's end every one is dead
    std::vector<long> max_locals(L.parts, 0);
    L.slots = scan_slots(
        L.stmts, P, last, [&](Id o) { return o >= 0 && part[o] >= 0; }, L.slot,
        [&](Id x) {
            if (L.shared[x]) ++shared;
            else max_locals[part[x]] = std::max(max_locals[part[x]], ++locals);
        },
        [&](Id x) { locals -= !L.shared[x]; });
    // the C++ compiler may inline every part into NAME_impl, each with its own spill slots: the
    // most locals live in each part, summed
    L.values = shared;
    for (long m : max_locals) L.values += m;
    // the largest part's frame: its locals, and what it reads from the work struct and the arguments
    std::vector<std::set<Id>> reads(L.parts);
    for (std::size_t k = 0; k < end; ++k)
        for (Id o : {P.node(L.stmts[k]).a, P.node(L.stmts[k]).b})
            if (o >= 0 && (P.node(o).op == Op::Input || (part[o] >= 0 && L.shared[o]))) reads[static_cast<std::size_t>(part[L.stmts[k]])].insert(o);
    for (std::size_t p = 0; p < L.parts; ++p)
        L.part_values = std::max(L.part_values, kSpillFactor * max_locals[p] + static_cast<long>(reads[p].size()));
}

/// The most values live at once in lane kernel K's loop (printer.cpp Form::lane_block): the
/// right-hand-side rows it reads, each from its first reader (where the printer loads it), and its
/// statements, each until its last reader (its outputs to its end). Scalar operands, read from the
/// work struct, are counted apart (kernel_operands).
long kernel_live(const ir::Program& P, const LaneKernel& K, const KernelProgram& kp, const std::vector<bool>& dep) {
    std::map<Id, std::size_t> last;  // lane value -> position of its last reader (past the end: kept)
    std::set<Id> rows;               // the rows not loaded yet
    for (std::size_t i = 0; i < K.inputs.size(); ++i)
        if (kp.row_read[i]) rows.insert(K.inputs[i]);
    const std::size_t end = kp.statements.size();
    for (std::size_t k = 0; k < end; ++k)
        for (Id o : {P.node(kp.statements[k]).a, P.node(kp.statements[k]).b})
            if (o >= 0 && dep[o]) last[o] = k;
    for (Id o : K.outputs)
        if (dep[o]) last[o] = end;
    long live = 0, most = 0;
    for (std::size_t k = 0; k < end; ++k) {
        const Id x = kp.statements[k];
        for (Id o : {P.node(x).a, P.node(x).b})
            if (o >= 0 && rows.erase(o)) ++live;
        most = std::max(most, ++live);
        std::set<Id> read;
        for (Id o : {P.node(x).a, P.node(x).b})
            if (o >= 0 && dep[o] && read.insert(o).second && last[o] == k) --live;
        if (!last.count(x)) --live;  // (read by no one: dead at once)
    }
    for (Id o : K.outputs)  // (a row that is an output itself, loaded at the end)
        if (dep[o] && rows.erase(o)) most = std::max(most, ++live);
    return most;
}

/// The scalar operands (not constants) lane kernel K's statements read, each once, in the order of
/// their first reader: broadcast from the work struct, or read from the table of broadcasts
/// (Layout::splats).
std::vector<Id> kernel_operands(const ir::Program& P, const KernelProgram& kp, const std::vector<bool>& dep) {
    std::vector<Id> operands;
    std::set<Id> seen;
    for (Id x : kp.statements)
        for (Id o : {P.node(x).a, P.node(x).b})
            if (o >= 0 && !dep[o] && !P.is_const(o) && seen.insert(o).second) operands.push_back(o);
    return operands;
}

/// The split into parts: the part of each statement (-1 for other nodes), the sine-cosine pairs
/// that stay in one part, and the values shared across parts (read in a later part, or written).
std::vector<int> split(Layout& L, const ir::Program& P) {
    const std::size_t end = L.stmts.size();
    L.per_part = end <= kOneFunction ? std::max<std::size_t>(end, 1) : kStatementsPerPart;
    L.parts = std::max<std::size_t>(1, (end + L.per_part - 1) / L.per_part);
    std::vector<int> part(P.size(), -1);
    L.shared.assign(P.size(), false);
    for (std::size_t k = 0; k < end; ++k) part[L.stmts[k]] = static_cast<int>(k / L.per_part);
    for (std::size_t k = 0; k + 1 < end; ++k) {  // a pair split by a part boundary keeps two calls
        const ir::Node &x = P.node(L.stmts[k]), &y = P.node(L.stmts[k + 1]);
        if (is_trig(x) && is_trig(y) && x.op != y.op && x.a == y.a && part[L.stmts[k]] == part[L.stmts[k + 1]])
            L.sincos_first.insert(L.stmts[k]);
    }
    if (L.parts > 1) {
        for (Id x : L.stmts)
            for (Id o : {P.node(x).a, P.node(x).b})
                if (o >= 0 && part[o] >= 0 && part[o] != part[x]) L.shared[o] = true;
        for (Id o : L.kept())
            if (part[o] >= 0) L.shared[o] = true;
        // staged in the order the entry point reads them: out and jac, then the kernels' broadcast
        // operands in the table's order (filled in runs), then the other values the kernels read
        L.stage.assign(P.size(), -1);
        std::vector<Id> order = L.kept();
        order.insert(order.end() - static_cast<std::ptrdiff_t>(L.lane_reads.size()), L.splats.begin(), L.splats.end());
        order.insert(order.end() - static_cast<std::ptrdiff_t>(L.lane_reads.size()), L.lane_rhs.begin(), L.lane_rhs.end());
        for (Id o : order)
            if (part[o] >= 0 && L.shared[o] && L.stage[o] < 0) L.stage[o] = static_cast<int>(L.staged.size()), L.staged.push_back(o);
        L.member.assign(P.size(), -1);
        for (Id x : L.stmts)
            if (L.shared[x] && L.stage[x] < 0) L.member[x] = L.members++;
    }
    for (Id x : L.stmts) L.work_values += L.shared[x];
    return part;
}

}  // namespace

std::vector<Id> Layout::written() const {
    std::vector<Id> w = out;
    w.insert(w.end(), jac.begin(), jac.end());
    return w;
}

std::vector<Id> Layout::kept() const {
    std::vector<Id> k = out;
    for (std::size_t e = 0; e < jac.size(); ++e)
        if (!lanes || !jac_in_lanes[e]) k.push_back(jac[e]);
    k.insert(k.end(), lane_reads.begin(), lane_reads.end());
    return k;
}

bool has_lanes(const EmitInput& in) { return !in.factorization->jacobian.empty() && !in.factorization->lane_groups.empty(); }

long Layout::lane_block_frame(long size) const {
    long most = 0;
    for (const LaneBlockCost& c : lane_block_costs) {
        long lanes = 1;
        while (lanes < c.columns) lanes *= 2;
        const long width = std::max(lanes * size, 16L);
        most = std::max(most, (c.arrays + c.live) * width + c.reads * size + kStackAllowance);
    }
    return most;
}

std::vector<std::vector<std::size_t>> lane_blocks(const Factorization& f) {
    std::vector<std::vector<std::size_t>> blocks;
    std::map<int, std::size_t> open;  // kernel -> its last block
    std::vector<std::size_t> columns;  // per block
    for (std::size_t g = 0; g < f.lane_groups.size(); ++g) {
        const LaneGroup& G = f.lane_groups[g];
        auto it = open.find(G.kernel);
        if (it != open.end() && columns[it->second] + G.columns.size() <= static_cast<std::size_t>(kLaneBlockColumns)) {
            blocks[it->second].push_back(g), columns[it->second] += G.columns.size();
            continue;
        }
        open[G.kernel] = blocks.size();
        blocks.push_back({g}), columns.push_back(G.columns.size());
    }
    return blocks;
}

std::size_t Layout::part_end(std::size_t p) const { return std::min(stmts.size(), part_begin(p) + per_part); }

void batch_memory(Layout& L, const ir::Program& P) {
    if (L.parts <= 1) return;
    const std::size_t end = L.stmts.size();
    // the outputs in place, each value where it is first written; the others copied there at the end
    L.place.assign(P.size(), -1);
    const std::vector<Id> written = L.written();
    for (std::size_t e = 0; e < written.size(); ++e)
        if (L.stage[written[e]] >= 0 && L.place[written[e]] < 0) L.place[written[e]] = static_cast<int>(e);
    const long placed = static_cast<long>(L.staged.size());  // (no longer in the struct: in the caller's lanes of out and jac)
    L.staged.clear(), L.stage.assign(P.size(), -1);
    L.member.clear(), L.members = 0;  // (work_slot instead)
    auto in_struct = [&](Id x) { return x >= 0 && L.shared[x] && L.place[x] < 0; };
    std::vector<std::size_t> last(P.size(), 0);
    for (std::size_t k = 0; k < end; ++k) {
        const ir::Node& n = P.node(L.stmts[k]);
        last[L.stmts[k]] = std::max(last[L.stmts[k]], k);
        for (Id o : {n.a, n.b})
            if (in_struct(o)) last[o] = is_trig(n) ? end : std::max(last[o], k);
    }
    long members = 0;
    L.work_slots = scan_slots(L.stmts, P, last, in_struct, L.work_slot, [&](Id) { ++members; }, [](Id) {});
    L.work_values += L.work_slots - members - placed;
    L.values += L.work_slots - members - placed;
}

Layout plan_layout(const EmitInput& in, const std::string& fn, const std::vector<Id>& jac, bool lanes, Order order) {
    const Factorization& f = *in.factorization;
    const ir::Program& P = f.prog;
    Layout L;
    L.fn = fn, L.out = f.outputs, L.jac = jac;
    if (lanes) {
        L.lanes = true;
        const std::size_t no = f.outputs.size(), nc = jac.size() / std::max<std::size_t>(no, 1);
        L.jac_in_lanes.assign(jac.size(), false);
        L.lane_dep = lane_dependent(P);
        const std::vector<bool>& dep = L.lane_dep;
        std::set<Id> reads;
        auto read = [&](Id x) {
            if (!P.is_const(x) && !dep[x]) reads.insert(x);
        };
        std::vector<bool> used(f.lane_kernels.size(), false);
        for (const LaneGroup& G : f.lane_groups) {
            for (int j : G.columns)
                for (std::size_t o = 0; o < no; ++o) L.jac_in_lanes[o * nc + static_cast<std::size_t>(j)] = true;
            for (Id x : G.rhs) read(x);
            for (Id x : G.extra) read(x);
            used[static_cast<std::size_t>(G.kernel)] = true;
        }
        L.lane_programs.resize(f.lane_kernels.size());
        for (std::size_t k = 0; k < f.lane_kernels.size(); ++k) {
            if (!used[k]) continue;
            L.lane_programs[k] = kernel_program(P, f.lane_kernels[k], dep);
            for (Id o : L.lane_programs[k].reads) read(o);
            for (Id o : f.lane_kernels[k].outputs) read(o);
        }
        L.lane_reads.assign(reads.begin(), reads.end());
        std::vector<Layout::LaneBlockCost> kernel_cost(f.lane_kernels.size());  // (live and reads, per used kernel)
        for (std::size_t k = 0; k < f.lane_kernels.size(); ++k)
            if (used[k]) {
                Layout::LaneBlockCost& c = kernel_cost[k];
                c.live = kernel_live(P, f.lane_kernels[k], L.lane_programs[k], dep);
                c.reads = static_cast<long>(kernel_operands(P, L.lane_programs[k], dep).size());
                for (bool r : L.lane_programs[k].row_read) c.arrays += r;
                for (Id o : f.lane_kernels[k].outputs) c.arrays += dep[o];
            }
        for (const std::vector<std::size_t>& block : lane_blocks(f)) {
            const std::size_t kernel = static_cast<std::size_t>(f.lane_groups[block.front()].kernel);
            for (Id o : kernel_operands(P, L.lane_programs[kernel], dep))
                if (L.splat_of.emplace(o, static_cast<int>(L.splats.size())).second) L.splats.push_back(o);
            for (std::size_t i = 0; i < f.lane_kernels[kernel].rows.size(); ++i)
                if (L.lane_programs[kernel].row_read[i])
                    for (std::size_t g : block)
                        for (std::size_t c = 0; c < f.lane_groups[g].columns.size(); ++c)
                            L.lane_rhs.push_back(f.lane_groups[g].rhs[i * f.lane_groups[g].columns.size() + c]);
            Layout::LaneBlockCost c = kernel_cost[kernel];
            for (std::size_t g : block) c.columns += static_cast<long>(f.lane_groups[g].columns.size());
            L.lane_block_costs.push_back(c);
        }
    }
    std::vector<Id> roots = L.kept();
    for (const ScheduledPivot& p : f.pivots)
        if (!P.is_const(p.value)) roots.push_back(p.value), L.checks[p.value].push_back(&p);
    L.stmts = statements(P, roots, order);
    allocate(L, P, split(L, P));
    L.workspace = L.stack(in.scalar_double ? sizeof(double) : sizeof(float)) > in.max_stack;
    return L;
}

namespace {

/// Layout::work_in_caller for L (and its lane variant): L over budget and in parts, and the
/// largest frame of any function its workspace form calls within the budget.
void settle_workspace(const EmitInput& in, Layout& L, Layout* lanes) {
    if (!L.workspace) return;
    const long size = in.scalar_double ? sizeof(double) : sizeof(float);
    const long frame = std::max({L.frame(size), lanes ? lanes->frame(size) : 0L, lanes ? lanes->lane_block_frame(size) : 0L});
    L.work_in_caller = L.parts > 1 && (!lanes || lanes->parts > 1) && frame <= in.max_stack;
    if (!L.work_in_caller) return;
    L.caller_work_values = std::max(L.work_values, lanes ? lanes->work_values : 0L);
    L.caller_frame = frame;
    L.caller_splat_bytes = lanes ? lanes->splat_bytes() : 0;
    if (lanes)
        lanes->work_in_caller = true, lanes->caller_work_values = L.caller_work_values, lanes->caller_frame = frame,
        lanes->caller_splat_bytes = L.caller_splat_bytes;
}

}  // namespace

Layouts plan_layouts(const EmitInput& in) {
    Layouts l;
    Layout depth_first = plan_layout(in, in.name, {}, false, Order::depth_first);
    Layout program = plan_layout(in, in.name, {}, false, Order::program);
    const bool take = 4 * depth_first.values <= 3 * program.values;
    if (in.batch) l.batch.push_back(depth_first), batch_memory(l.batch.back(), in.factorization->prog);
    l.scalar.push_back(take ? std::move(depth_first) : std::move(program));  // (the lane variant of NAME_derivatives: emit.cpp)
    if (!in.factorization->jacobian.empty()) {
        l.scalar.push_back(plan_layout(in, in.name + "_derivatives", in.factorization->jacobian, false, Order::depth_first));
        if (in.batch) l.batch.push_back(l.scalar.back()), batch_memory(l.batch.back(), in.factorization->prog);
        if (has_lanes(in)) l.lanes = plan_layout(in, in.name + "_derivatives", in.factorization->jacobian, true, Order::depth_first);
    }
    settle_workspace(in, l.scalar.front(), nullptr);
    if (l.scalar.size() > 1) settle_workspace(in, l.scalar[1], l.lanes ? &*l.lanes : nullptr);
    return l;
}

long BatchEntry::scalar_size() const { return scalar == std::string("double") ? sizeof(double) : sizeof(float); }

std::string BatchEntry::declaration() const {
    return fmt::format("int {1}(int n, const {0}* q, const {0}* qd, const {0}* in, {0}* out{2}, int* status)", scalar, name,
                       layout->jac.empty() ? "" : fmt::format(", {}* jac", scalar));
}

std::vector<BatchEntry> batch_entries(const EmitInput& in, const std::vector<Layout>& layouts) {
    std::vector<BatchEntry> e;
    for (const Layout& L : layouts) {
        if (in.scalar_double) e.push_back({L.fn + "_batch", L.fn, "double", &L});
        if (in.scalar_float) e.push_back({L.fn + "_f_batch", L.fn + "_f", "float", &L});
    }
    return e;
}

long batch_lane_bytes(const EmitInput& in, const Layout& L, long size) {
    const Model& m = in.load->model;
    const long args = static_cast<long>(independent_q_slots(m).size() + independent_v_slots(m).size() + in.system->in.size() +
                                        L.out.size() + L.jac.size());
    return (kSpillFactor * L.values + args) * size;
}

}  // namespace nelu::emit
