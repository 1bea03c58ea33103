// ref_ops.cpp: see ref_ops.hpp.
#include "ref_ops.hpp"

#include <random>

#include <fmt/format.h>

#include "nelu/reference.hpp"
#include "nelu/state.hpp"

namespace nelu {
namespace {

std::vector<Counted> counted(const std::vector<double>& v) { return {v.begin(), v.end()}; }

std::string cell(const OpCounts& c) { return fmt::format("{} / {}", c.mul, c.add); }

}  // namespace

ReferenceOps count_reference_ops(const Model& m) {
    std::mt19937_64 rng(7);
    State st = random_state(m, rng);
    std::vector<Counted> q = counted(st.q), qd = counted(st.qd), qdd = counted(st.qdd), tau = counted(st.tau);
    std::vector<SVec<Counted>> fext(m.num_bodies());
    for (int i = 0; i < m.num_bodies(); ++i)
        for (int k = 0; k < 6; ++k) fext[i][k] = st.fext[i][k];
    std::vector<Counted> out(m.nv), M(m.nv * m.nv);
    ReferenceOps r;
    OpCounter::reset();
    rnea(m, q.data(), qd.data(), qdd.data(), fext.data(), out.data());
    r.rnea = OpCounter::get();
    OpCounter::reset();
    aba(m, q.data(), qd.data(), tau.data(), fext.data(), out.data());
    r.aba = OpCounter::get();
    OpCounter::reset();
    crba(m, q.data(), M.data());
    r.crba = OpCounter::get();
    return r;
}

std::string format_reference_ops_table(const std::vector<NamedModel>& models, const std::vector<int>& dh_chain_n) {
    std::string s =
        "| robot | nv | RNEA counted mul / add | RNEA published | ratio (mul+add) | ABA counted mul / add | "
        "ABA published | ratio (mul+add) | sin+cos | CRBA counted mul / add |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
    for (std::size_t k = 0; k < models.size(); ++k) {
        const Model& m = models[k].model;
        ReferenceOps r = count_reference_ops(m);
        const int n = k < dh_chain_n.size() ? dh_chain_n[k] : 0;
        std::string pr = "-", pa = "-", rr = "-", ra = "-";
        if (n > 0) {
            OpCounts a = published_rnea(n), b = published_aba(n);
            pr = cell(a), pa = cell(b);
            rr = fmt::format("{:.2f}", double(r.rnea.mul + r.rnea.add) / double(a.mul + a.add));
            ra = fmt::format("{:.2f}", double(r.aba.mul + r.aba.add) / double(b.mul + b.add));
        }
        s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", models[k].name, m.nv, cell(r.rnea), pr, rr,
                         cell(r.aba), pa, ra, r.rnea.sin + r.rnea.cos, cell(r.crba));
    }
    return s;
}

}  // namespace nelu
