// order.cpp: see order.hpp.
#include "order.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <btf.h>
#include <umfpack.h>

#include "diagnostics.hpp"
#include "nelu/state.hpp"

namespace nelu {
namespace {

struct Candidate {
    std::string name;
    std::vector<Pivot> order;
    std::vector<bool> articulated;
};

void push_block(Candidate& c, const std::vector<int>& rows, const std::vector<int>& cols, bool articulated = false) {
    for (std::size_t k = 0; k < rows.size(); ++k) c.order.push_back({rows[k], cols[k]}), c.articulated.push_back(articulated);
}

/// Nori's inverse-dynamics permutations: accelerations root to leaves, forces leaves to root.
Candidate tree_rnea(const System& sys) {
    Candidate c{"tree-rnea", {}, {}};
    const int nb = static_cast<int>(sys.blocks.size());
    for (int i = 0; i < nb; ++i) {
        const BodyBlock& B = sys.blocks[i];
        for (std::size_t s = 0; s < B.y.size(); ++s) push_block(c, B.row_y[s], B.y[s]);
        push_block(c, B.row_a, B.a);
    }
    for (int i = nb - 1; i >= 0; --i) {
        const BodyBlock& B = sys.blocks[i];
        push_block(c, B.row_f, B.f);
        for (std::size_t s = 0; s < B.z.size(); ++s) push_block(c, B.row_z[s], B.z[s]);
        push_block(c, B.row_tau, B.joint);
    }
    return c;
}

/// The articulated-body algorithm as an elimination order (leaves to root).
Candidate tree_aba(const System& sys) {
    Candidate c{"tree-aba", {}, {}};
    const int nb = static_cast<int>(sys.blocks.size());
    for (int i = nb - 1; i >= 0; --i) {
        const BodyBlock& B = sys.blocks[i];
        push_block(c, B.row_f, B.f);
        push_block(c, B.row_a, B.a);
        push_block(c, B.row_tau, B.joint, B.joint_is_qdd);
        const int m = static_cast<int>(B.z.size());  // m = factors - 1
        for (int s = 0; s < m; ++s) {
            push_block(c, B.row_z[s], B.z[s]);
            push_block(c, B.row_y[m - 1 - s], B.y[m - 1 - s]);
        }
    }
    return c;
}

/// UMFPACK's pivot sequence for D at a random configuration.
bool umfpack_order(const Model& model, const System& sys, Candidate& c, std::string& why) {
    c.name = "umfpack";
    std::mt19937_64 rng(0x756d6670);
    std::vector<double> q = random_configuration(model, rng), qd(model.nv, 0.0);
    Csc A = values_of(sys, q, qd);
    double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
    umfpack_di_defaults(control);
    control[UMFPACK_SCALE] = UMFPACK_SCALE_NONE;
    void *sym = nullptr, *num = nullptr;
    int st = umfpack_di_symbolic(A.n, A.n, A.p.data(), A.i.data(), A.x.data(), &sym, control, info);
    if (st == UMFPACK_OK) st = umfpack_di_numeric(A.p.data(), A.i.data(), A.x.data(), sym, &num, control, info);
    if (sym) umfpack_di_free_symbolic(&sym);
    if (st != UMFPACK_OK) {
        if (num) umfpack_di_free_numeric(&num);
        why = fmt::format("UMFPACK status {}", st);
        return false;
    }
    std::vector<int> P(A.n), Q(A.n);
    int do_recip = 0;
    st = umfpack_di_get_numeric(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, P.data(), Q.data(), nullptr, &do_recip, nullptr, num);
    umfpack_di_free_numeric(&num);
    if (st != UMFPACK_OK) {
        why = fmt::format("UMFPACK get_numeric status {}", st);
        return false;
    }
    for (int k = 0; k < A.n; ++k) c.order.push_back({P[k], Q[k]});
    return true;
}

/// The triangular order of btf_order (its blocks are 1x1; the form is upper triangular, so the
/// last block is eliminated first).
Candidate btf_triangular(const Analysis& an) {
    Candidate c{"btf", {}, {}};
    for (int k = an.n - 1; k >= 0; --k) {
        int col = an.btf_Q[k] < 0 ? BTF_UNFLIP(an.btf_Q[k]) : an.btf_Q[k];
        c.order.push_back({an.btf_P[k], col});
    }
    return c;
}

/// Configurations for validation: the special ones, then random ones.
std::vector<std::vector<double>> validation_configurations(const Model& model, int count) {
    std::mt19937_64 rng(0x76616c69);
    std::vector<std::vector<double>> qs = special_configurations(model, rng);
    while (static_cast<int>(qs.size()) < count) qs.push_back(random_configuration(model, rng));
    return qs;
}

/// Growth of the factorization: max |value| of its nodes over max |entry of D|, at a few configurations.
double factorization_growth(const Model& model, const System& sys, const Factorization& f) {
    std::vector<ir::Id> entries, roots;
    for (const auto& row : sys.entries)
        for (const auto& [c, v] : row)
            if (f.system_map[v] >= 0) entries.push_back(f.system_map[v]);
    roots = entries;  // the factorization proper: pivots and what they need (no inputs involved)
    for (const ScheduledPivot& p : f.pivots) roots.push_back(p.value);
    std::vector<bool> live = f.prog.live_nodes(roots);
    std::vector<double> qd(model.nv, 0.0), in(std::max<std::size_t>(1, sys.in.size()), 0.0);
    double growth = 0;
    for (const auto& q : validation_configurations(model, 12)) {
        std::vector<double> val = f.prog.evaluate(q.data(), qd.data(), in.data(), live);
        double a = 0, u = 0;
        for (ir::Id e : entries) a = std::max(a, std::abs(val[e]));
        for (int i = f.first_factor_node; i < f.first_solve_node; ++i)
            if (live[i]) u = std::max(u, std::abs(val[i]));
        if (a > 0) growth = std::max(growth, u / a);
    }
    return growth;
}

PivotValidation validate_pivots(const Model& model, const System& sys, Factorization& f, const OrderOptions& opt) {
    PivotValidation v;
    v.growth = factorization_growth(model, sys, f);
    std::vector<ir::Id> roots;
    std::vector<int> which;
    bool needs_full = false;
    for (std::size_t k = 0; k < f.pivots.size(); ++k)
        if (f.pivots[k].kind != PivotKind::Constant) {
            roots.push_back(f.pivots[k].value), which.push_back(static_cast<int>(k));
            needs_full = needs_full || f.pivots[k].kind == PivotKind::Validated;
        }
    v.checked_pivots = static_cast<int>(roots.size());
    if (roots.empty()) return v;
    const int count = needs_full ? opt.validation_configs : std::min(opt.validation_configs, 200);
    std::vector<bool> live = f.prog.live_nodes(roots);
    std::vector<double> lo(roots.size(), INFINITY), hi(roots.size(), 0.0), qd(model.nv, 0.0),
        in(std::max<std::size_t>(1, sys.in.size()), 0.0);
    for (const auto& q : validation_configurations(model, count)) {
        std::vector<double> val = f.prog.evaluate(q.data(), qd.data(), in.data(), live);
        for (std::size_t k = 0; k < roots.size(); ++k) {
            double a = std::abs(val[roots[k]]);
            if (!(a == a)) a = 0;  // NaN counts as a zero pivot
            lo[k] = std::min(lo[k], a), hi[k] = std::max(hi[k], a);
        }
        ++v.configurations;
    }
    v.worst_ratio = 1;
    for (std::size_t k = 0; k < roots.size(); ++k) {
        double ratio = hi[k] > 0 ? lo[k] / hi[k] : 0;
        ScheduledPivot& p = f.pivots[which[k]];
        // 1e-6 of the smallest |pivot| seen, rounded down to a power of ten so that the emitted
        // code does not depend on the last bits of the validation
        p.threshold = lo[k] > 0 ? std::pow(10.0, std::floor(std::log10(1e-6 * lo[k]))) : 0.0;
        if (ratio < v.worst_ratio) {
            v.worst_ratio = ratio;
            v.worst_pivot = fmt::format("({}, {})", sys.rows[p.at.row].label, sys.cols[p.at.col].label);
        }
        if (!(lo[k] > 0) || (p.kind == PivotKind::Validated && ratio < 1e-8))
            throw IllPosedError(fmt::format("pivot ({}, {}) of ordering {} is not safe: |pivot| ranges over [{:.3g}, {:.3g}] "
                                            "across {} configurations", sys.rows[p.at.row].label, sys.cols[p.at.col].label,
                                            f.ordering, lo[k], hi[k], v.configurations));
    }
    return v;
}

}  // namespace

OrderResult run_order(const Model& model, const System& sys, const Analysis& an, const OrderOptions& opt) {
    // The most promising candidate first: its size bounds the others'.
    bool seeks_qdd = false;
    for (const BodyBlock& B : sys.blocks) seeks_qdd = seeks_qdd || (B.joint_is_qdd && !B.joint.empty());
    std::vector<Candidate> cands;
    OrderResult res;
    if (!seeks_qdd) cands.push_back(tree_rnea(sys));
    cands.push_back(tree_aba(sys));
    if (an.triangular) cands.push_back(btf_triangular(an));
    Candidate um;
    std::string why;
    if (umfpack_order(model, sys, um, why)) cands.push_back(um);
    else res.candidates.push_back({"umfpack", false, why, {}, 0});
    if (seeks_qdd) cands.push_back(tree_rnea(sys));  // forms a dense joint-space block: last, bounded
    std::vector<Factorization> ok;
    long best_entries = 0;
    for (const Candidate& c : cands) {
        if (opt.progress) std::fprintf(stderr, "nelu: order: factoring with candidate %s (%d columns)\n", c.name.c_str(), sys.n());
        Factorization f;
        CandidateReport rep{c.name, false, "", {}, 0};
        rep.ok = run_schedule(sys, c.order, c.articulated, c.name, f, rep.why, 4 * best_entries);
        if (rep.ok) {
            rep.ops = f.ops, rep.fill = f.fill();
            const long entries = f.nnz_L + f.nnz_U;
            best_entries = best_entries == 0 ? entries : std::min(best_entries, entries);
            ok.push_back(std::move(f));
        }
        res.candidates.push_back(rep);
    }
    // Fewest operations first (stable: ties keep the candidate order); the first whose pivots are
    // safe wins.
    std::stable_sort(ok.begin(), ok.end(), [](const Factorization& a, const Factorization& b) { return a.ops.total() < b.ops.total(); });
    std::string reasons;
    for (Factorization& f : ok) {
        if (opt.progress) std::fprintf(stderr, "nelu: order: validating the pivots of %s\n", f.ordering.c_str());
        try {
            res.validation = validate_pivots(model, sys, f, opt);
        } catch (const IllPosedError& e) {
            for (auto& r : res.candidates)
                if (r.name == f.ordering) r.ok = false, r.why = e.what();
            reasons += fmt::format("\n  {}: {}", f.ordering, e.what());
            continue;
        }
        res.best = std::move(f);
        return res;
    }
    for (const auto& r : res.candidates)
        if (r.why.find("not safe") == std::string::npos && !r.ok) reasons += fmt::format("\n  {}: {}", r.name, r.why);
    throw IllPosedError("no candidate ordering gives a safe pivot sequence:" + reasons);
}

}  // namespace nelu
