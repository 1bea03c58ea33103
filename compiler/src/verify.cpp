// verify.cpp: see verify.hpp.
#include "verify.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <Eigen/Dense>

#include "nelu/reference.hpp"

namespace nelu {

std::vector<double> solver_inputs(const System& sys, const Model& m, const State& st) {
    std::vector<double> in;
    for (const Slot& s : sys.in) {
        const int v = s.body >= 0 && m.bodies[s.body].nv() > 0 ? m.bodies[s.body].v_index + s.comp : 0;
        switch (s.quantity) {
            case Quantity::JointAcceleration: in.push_back(st.qdd[v]); break;
            case Quantity::JointTorque: in.push_back(st.tau[v]); break;
            case Quantity::ExternalWrench: in.push_back(st.fext[s.body][s.comp]); break;
            default: in.push_back(0.0); break;
        }
    }
    if (in.empty()) in.push_back(0.0);
    return in;
}

namespace {

/// The model with the problem's gravity.
Model with_gravity(const Model& m, const Problem& p) {
    Model mg = m;
    mg.gravity = p.gravity;
    return mg;
}

/// The state's external wrenches, zero where the problem says so.
std::vector<SVec<double>> problem_wrenches(const Model& m, const Problem& p, const State& st) {
    std::vector<SVec<double>> fext = st.fext;
    for (int i = 0; i < m.num_bodies(); ++i)
        if (p.wrench[i] == WrenchMode::Zero) fext[i] = zero6<double>();
    return fext;
}

}  // namespace

std::vector<State> verification_states(const Model& m, std::uint64_t seed, int random_states) {
    std::mt19937_64 rng(seed);
    std::vector<State> states;
    for (const auto& q : special_configurations(m, rng)) {
        State s = random_state(m, rng);
        s.q = q;
        states.push_back(s);
    }
    for (int k = 0; k < random_states; ++k) states.push_back(random_state(m, rng));
    return states;
}

double forward_error(const std::vector<double>& out, const std::vector<double>& ref) {
    double e = 0, scale = 1;
    for (std::size_t k = 0; k < ref.size(); ++k) {
        const double d = std::abs(out[k] - ref[k]);
        e = std::max(e, d == d ? d : INFINITY), scale = std::max(scale, std::abs(ref[k]));
    }
    return e / scale;
}

std::vector<double> reference_outputs(const System& sys, const Model& m, const Problem& p, const State& st) {
    const Model mg = with_gravity(m, p);
    const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
    const int nv = m.nv;
    std::vector<bool> known_qdd(nv, false);
    bool all_qdd = true, all_tau = true;
    for (const Body& b : m.bodies)
        for (int k = 0; k < b.nv(); ++k) {
            known_qdd[b.v_index + k] = p.joint[&b - m.bodies.data()] == JointKnown::Qdd;
            all_qdd = all_qdd && known_qdd[b.v_index + k];
            all_tau = all_tau && !known_qdd[b.v_index + k];
        }
    std::vector<double> qdd = st.qdd, tau = st.tau;
    if (all_qdd) {
        rnea(mg, st.q.data(), st.qd.data(), st.qdd.data(), fext.data(), tau.data());
    } else if (all_tau) {
        aba(mg, st.q.data(), st.qd.data(), st.tau.data(), fext.data(), qdd.data());
    } else {  // M_UU qdd_U = tau_U - h_U - M_UK qdd_K;  tau_K = M_K. qdd + h_K
        std::vector<double> M(nv * nv), h(nv);
        crba(mg, st.q.data(), M.data());
        nonlinear_effects(mg, st.q.data(), st.qd.data(), fext.data(), h.data());
        std::vector<int> U, K;
        for (int i = 0; i < nv; ++i) (known_qdd[i] ? K : U).push_back(i);
        Eigen::MatrixXd Muu(U.size(), U.size());
        Eigen::VectorXd rhs(U.size());
        for (std::size_t a = 0; a < U.size(); ++a) {
            rhs(a) = st.tau[U[a]] - h[U[a]];
            for (int k : K) rhs(a) -= M[U[a] * nv + k] * st.qdd[k];
            for (std::size_t c = 0; c < U.size(); ++c) Muu(a, c) = M[U[a] * nv + U[c]];
        }
        Eigen::VectorXd x = Muu.ldlt().solve(rhs);
        for (std::size_t a = 0; a < U.size(); ++a) qdd[U[a]] = x(a);
        for (int k : K) {
            tau[k] = h[k];
            for (int j = 0; j < nv; ++j) tau[k] += M[k * nv + j] * qdd[j];
        }
    }
    std::vector<double> out;
    for (const Slot& s : sys.out) {
        const int v = m.bodies[s.body].v_index + s.comp;
        out.push_back(s.quantity == Quantity::JointAcceleration ? qdd[v] : tau[v]);
    }
    return out;
}

double backward_error(const System& sys, const Model& m, const Problem& p, const State& st, const std::vector<double>& out) {
    const Model mg = with_gravity(m, p);
    const std::vector<SVec<double>> fext = problem_wrenches(m, p, st);
    const int nv = m.nv;
    std::vector<double> qdd = st.qdd, tau = st.tau, M(nv * nv), h(nv);
    for (std::size_t k = 0; k < sys.out.size(); ++k) {
        const int v = m.bodies[sys.out[k].body].v_index + sys.out[k].comp;
        (sys.out[k].quantity == Quantity::JointAcceleration ? qdd : tau)[v] = out[k];
    }
    crba(mg, st.q.data(), M.data());
    nonlinear_effects(mg, st.q.data(), st.qd.data(), fext.data(), h.data());
    double r = 0, Mnorm = 0, qn = 0, hn = 0, tn = 0;
    for (int i = 0; i < nv; ++i) {
        double ri = h[i] - tau[i], rowsum = 0;
        for (int j = 0; j < nv; ++j) ri += M[i * nv + j] * qdd[j], rowsum += std::abs(M[i * nv + j]);
        r = std::max(r, std::abs(ri) == std::abs(ri) ? std::abs(ri) : INFINITY);
        Mnorm = std::max(Mnorm, rowsum), qn = std::max(qn, std::abs(qdd[i]));
        hn = std::max(hn, std::abs(h[i])), tn = std::max(tn, std::abs(tau[i]));
    }
    const double scale = Mnorm * qn + hn + tn;
    return scale > 0 ? r / scale : r;
}

VerifyReport run_verify(const Model& m, const Problem& p, const System& sys, const Factorization& f, int random_states) {
    VerifyReport rep;
    const std::vector<State> states = verification_states(m, 0x76657269, random_states);
    std::vector<bool> live = f.prog.live_nodes(f.outputs);
    bool seeks_qdd = false;
    for (const Slot& s : sys.out) seeks_qdd = seeks_qdd || s.quantity == Quantity::JointAcceleration;
    rep.seeks_qdd = seeks_qdd;
    for (const State& st : states) {
        std::vector<double> in = solver_inputs(sys, m, st);
        std::vector<double> val = f.prog.evaluate(st.q.data(), st.qd.data(), in.data(), live);
        std::vector<double> ref = reference_outputs(sys, m, p, st);
        std::vector<double> out;
        for (ir::Id o : f.outputs) out.push_back(val[o]);
        rep.max_rel_error = std::max(rep.max_rel_error, forward_error(out, ref));
        if (seeks_qdd) rep.max_backward_error = std::max(rep.max_backward_error, backward_error(sys, m, p, st, out));
        ++rep.states;
    }
    return rep;
}

}  // namespace nelu
