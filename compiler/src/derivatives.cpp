// derivatives.cpp: see derivatives.hpp.
#include "derivatives.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sym.hpp"
#include "system.hpp"

namespace nelu {

std::vector<Tangent> jacobian_columns(const Model& m, int n_in) {
    std::vector<Tangent> cols;
    static const char* twist[6] = {"wx", "wy", "wz", "vx", "vy", "vz"};
    for (Tangent::Kind kind : {Tangent::Kind::Q, Tangent::Kind::Qd})
        for (const Body& b : m.bodies)
            for (int k = 0; k < (b.is_mimic() ? 0 : b.nv()); ++k)  // mimic joints follow their masters: no column
                cols.push_back({kind, b.v_index + k,
                                fmt::format("{}[{}]{}", kind == Tangent::Kind::Q ? "q" : "qd", b.joint_name,
                                            b.nv() > 1 ? fmt::format(".{}", twist[k]) : std::string())});
    for (int k = 0; k < n_in; ++k) cols.push_back({Tangent::Kind::In, k, fmt::format("in[{}]", k)});
    return cols;
}

Differentiator::Differentiator(ir::Program& P, const Model& m, const Tangent& t) : P_(P) {
    using ir::Source;
    if (t.kind == Tangent::Kind::In) {
        seed_[key(Source::In, t.index)] = P.one();
        return;
    }
    for (const Body& b : m.bodies) {
        if (t.index < b.v_index || t.index >= b.v_index + b.nv()) continue;
        const int k = t.index - b.v_index;
        if (t.kind == Tangent::Kind::Qd) {
            seed_[key(Source::Qd, t.index)] = P.one();
        } else if (b.type != JointType::Floating) {
            seed_[key(Source::Q, b.q_index)] = P.one();
        } else {
            const int qi = b.q_index;
            ir::Id x = P.input(Source::Q, qi + 3), y = P.input(Source::Q, qi + 4), z = P.input(Source::Q, qi + 5),
                   w = P.input(Source::Q, qi + 6);
            const ir::Id half = P.constant(0.5);
            if (k < 3) {  // d quat / d dw_k = (1/2) q ⊗ (e_k, 0): vector w e_k + qv x e_k, scalar -qv_k
                const ir::Id qv[3] = {x, y, z};
                ir::Id vec[3] = {P.zero(), P.zero(), P.zero()};
                vec[k] = w;
                // qv x e_k: e_0 -> (0, z, -y), e_1 -> (-z, 0, x), e_2 -> (y, -x, 0)
                const int a = (k + 1) % 3, c = (k + 2) % 3;
                vec[a] = P.add(vec[a], qv[c]);
                vec[c] = P.sub(vec[c], qv[a]);
                for (int i = 0; i < 3; ++i) seed_[key(Source::Q, qi + 3 + i)] = P.mul(half, vec[i]);
                seed_[key(Source::Q, qi + 6)] = P.neg(P.mul(half, qv[k]));
            } else {  // d p / d dv_j = R e_j, R the body-to-world rotation of the unit quaternion
                const int j = k - 3;
                const auto R = quaternion_rotation(P, x, y, z, w);
                for (int i = 0; i < 3; ++i) seed_[key(Source::Q, qi + i)] = R[i][j];
            }
        }
    }
}

ir::Id Differentiator::d(ir::Id root) {
    // iterative post-order: operands first (programs are deep; no recursion)
    std::vector<ir::Id> stack{root};
    while (!stack.empty()) {
        const ir::Id x = stack.back();
        if (memo_.count(x)) {
            stack.pop_back();
            continue;
        }
        const ir::Node n = P_.node(x);
        bool ready = true;
        for (ir::Id o : {n.a, n.b})
            if (o >= 0 && !memo_.count(o)) stack.push_back(o), ready = false;
        if (!ready) continue;
        stack.pop_back();
        ir::Id r = P_.zero();
        const ir::Id da = n.a >= 0 ? memo_.at(n.a) : P_.zero(), db = n.b >= 0 ? memo_.at(n.b) : P_.zero();
        switch (n.op) {
            case ir::Op::Const: r = P_.zero(); break;
            case ir::Op::Input: {
                auto it = seed_.find(key(n.source, n.index));
                r = it == seed_.end() ? P_.zero() : it->second;
                break;
            }
            case ir::Op::Add: r = P_.add(da, db); break;
            case ir::Op::Sub: r = P_.sub(da, db); break;
            case ir::Op::Mul: r = P_.add(P_.mul(da, n.b), P_.mul(n.a, db)); break;
            case ir::Op::Div: r = db == P_.zero() ? P_.div(da, n.b) : P_.div(P_.sub(da, P_.mul(x, db)), n.b); break;
            case ir::Op::Neg: r = P_.neg(da); break;
            case ir::Op::Sin: r = P_.mul(P_.cos(n.a), da); break;
            case ir::Op::Cos: r = P_.neg(P_.mul(P_.sin(n.a), da)); break;
            case ir::Op::Sqrt: r = da == P_.zero() ? P_.zero() : P_.div(da, P_.mul(P_.constant(2), x)); break;
            case ir::Op::Log3Ratio:  // f_x dx + f_c dc, f_c = -1 / (x + c^2)
                r = P_.sub(P_.mul(P_.log3_ratio_dx(n.a, n.b), da), P_.div(db, P_.add(n.a, P_.mul(n.b, n.b))));
                break;
            case ir::Op::Log6Beta: r = P_.mul(P_.log6_beta_dt(n.a), da); break;
            case ir::Op::Log3RatioDx:
            case ir::Op::Log6BetaDt: throw std::logic_error("ir: second derivatives of the rotation-log functions are not implemented");
        }
        memo_[x] = r;
    }
    return memo_.at(root);
}

namespace {

using ir::Sym;
using V6s = SVec<Sym>;

V6s vec(ir::Program& P, const std::array<ir::Id, 6>& x) {
    V6s v;
    for (int k = 0; k < 6; ++k) v[k] = Sym(P, x[k]);
    return v;
}

V6s solution(ir::Program& P, const std::vector<ir::Id>& x, const std::vector<int>& cols) {
    V6s v;
    for (int k = 0; k < 6; ++k) v[k] = Sym(P, x[static_cast<std::size_t>(cols[k])]);
    return v;
}

/// A factor as a Pluecker transform: rot(E) = plx(E, 0), xlt(r) = plx(1, r).
Xform<Sym> factor_xform(ir::Program& P, const TransformFactor& F) {
    Xform<Sym> X = identity_xform<Sym>();
    for (int i = 0; i < 3; ++i) {
        if (!F.rotation) X.r[i] = Sym(P, F.r[i]);
        else
            for (int j = 0; j < 3; ++j) X.E(i, j) = Sym(P, F.E[i][j]);
    }
    return X;
}

/// X_i^T f: a force of body i's frame in its parent's (the factors' transposes, last first).
V6s force_to_parent(const std::vector<Xform<Sym>>& X, V6s f) {
    for (auto F = X.rbegin(); F != X.rend(); ++F) f = apply_transpose(*F, f);
    return f;
}

/// X_i^T I X_i: an inertia of body i's frame in its parent's.
Inertia<Sym> inertia_to_parent(const std::vector<Xform<Sym>>& X, Inertia<Sym> I) {
    for (auto F = X.rbegin(); F != X.rend(); ++F) I = transform_to_parent(*F, I);
    return I;
}

/// The rate of a rigid-body inertia moving with velocity v = [w; nu], Idot = v x* I - I vx, which is
/// again of the form [Ibar' h'x; h'x^T m'] with m' = 0, h' = w x h + m nu and
/// Ibar' = wx Ibar - Ibar wx - (nux hx + hx nux) = A + A^T - (h nu^T + nu h^T) + 2 (h . nu) 1, A = wx Ibar.
Inertia<Sym> inertia_rate(const Inertia<Sym>& I, const V6s& v) {
    const Mat3<Sym> A = skew(v.w) * I.Ibar;
    const Sym hn = dot(I.h, v.l);
    Inertia<Sym> R{Sym(0.0), cross(v.w, I.h) + I.m * v.l, zero_mat3<Sym>()};
    for (int i = 0; i < 3; ++i)
        for (int j = i; j < 3; ++j) {
            Sym e = A(i, j) + A(j, i) - (I.h[i] * v.l[j] + v.l[i] * I.h[j]);
            if (i == j) e = e + Sym(2.0) * hn;
            R.Ibar(i, j) = R.Ibar(j, i) = e;
        }
    return R;
}

Inertia<Sym> constant_inertia(const Inertia<double>& I) {
    Inertia<Sym> R{Sym(I.m), {{Sym(I.h[0]), Sym(I.h[1]), Sym(I.h[2])}}, zero_mat3<Sym>()};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R.Ibar(i, j) = Sym(I.Ibar(i, j));
    return R;
}

/// Per degree of freedom of a body: the joint-side motion vectors and the subtree-side force vectors.
struct Dof {
    V6s S, psi, u, phi;            // motion, body frame
    V6s alpha, beta, G, H;         // force, body frame
};

}  // namespace

StructuredTerm structured_term(const std::string& name) {
    static const std::pair<const char*, StructuredTerm> terms[] = {
        {"PsiParentVelocity", StructuredTerm::PsiParentVelocity}, {"UAcceleration", StructuredTerm::UAcceleration},
        {"UVelocity", StructuredTerm::UVelocity}, {"PhiVelocity", StructuredTerm::PhiVelocity},
        {"OwnInertia", StructuredTerm::OwnInertia}, {"ChildInertia", StructuredTerm::ChildInertia},
        {"OwnRate", StructuredTerm::OwnRate}, {"ChildRate", StructuredTerm::ChildRate},
        {"OwnMomentum", StructuredTerm::OwnMomentum}, {"ChildMomentum", StructuredTerm::ChildMomentum},
        {"BetaRate", StructuredTerm::BetaRate}, {"BetaMomentum", StructuredTerm::BetaMomentum},
        {"GForce", StructuredTerm::GForce}, {"GInertia", StructuredTerm::GInertia}, {"GRate", StructuredTerm::GRate},
        {"GMomentum", StructuredTerm::GMomentum}, {"HInertia", StructuredTerm::HInertia}, {"HRate", StructuredTerm::HRate},
        {"HMomentum", StructuredTerm::HMomentum}};
    if (name.empty() || name == "None") return StructuredTerm::None;
    for (const auto& [n, t] : terms)
        if (name == n) return t;
    throw std::invalid_argument("no structured derivative term '" + name + "'");
}

IdDerivatives structured_id_derivatives(ir::Program& P, const System& sys, const std::vector<ir::Id>& x, const std::vector<bool>& frames,
                                        StructuredTerm omit) {
    // a term, or nothing when it is the one omitted
    auto term = [omit](StructuredTerm t, const V6s& v) { return t == omit ? zero6<Sym>() : v; };
    auto inertia = [omit](StructuredTerm t, const Inertia<Sym>& I) {
        return t == omit ? Inertia<Sym>{Sym(0.0), zero3<Sym>(), zero_mat3<Sym>()} : I;
    };
    const int nb = static_cast<int>(sys.kinematics.size());
    IdDerivatives D;
    for (const BodyKinematics& k : sys.kinematics) D.nv = std::max(D.nv, k.v_index + static_cast<int>(k.S.size()));
    const std::size_t nv = static_cast<std::size_t>(D.nv);
    D.dq.assign(nv * nv, P.zero()), D.dqd.assign(nv * nv, P.zero()), D.M.assign(nv * nv, P.zero());
    // the solved (or known) acceleration of body i's degree of freedom d; a mimic's is its
    // multiplier times its master's when the system has no unknown of its own for it
    auto joint_qdd = [&](auto&& self, int i, std::size_t d) -> ir::Id {
        const BodyKinematics& k = sys.kinematics[i];
        if (k.qdd_input[d] >= 0) return P.input(ir::Source::In, k.qdd_input[d]);
        if (!sys.blocks[i].qdd.empty()) return x[static_cast<std::size_t>(sys.blocks[i].qdd[d])];
        return P.mul(P.constant(k.multiplier), self(self, k.master, 0));  // (a master is no mimic)
    };
    std::vector<std::vector<Xform<Sym>>> X(nb);
    std::vector<std::vector<Dof>> dofs(nb);
    std::vector<Inertia<Sym>> IC(nb), IdotC(nb);
    std::vector<V6s> hC(nb), f(nb);
    for (int i = 0; i < nb; ++i) {  // per body: what its joint contributes, and its own inertia terms
        const BodyKinematics& k = sys.kinematics[i];
        const BodyBlock& B = sys.blocks[i];
        for (const TransformFactor& F : k.factors) X[i].push_back(factor_xform(P, F));
        std::vector<ir::Id> vel(sys.velocity[i]);
        const V6s v = vec(P, {vel[0], vel[1], vel[2], vel[3], vel[4], vel[5]});
        V6s vS = zero6<Sym>(), ap = solution(P, x, B.a) - vec(P, k.c);
        for (std::size_t d = 0; d < k.S.size(); ++d) {
            const V6s S = vec(P, k.S[d]);
            const ir::Id qdd = joint_qdd(joint_qdd, i, d);
            vS = vS + Sym(P, k.qd[d]) * S;
            ap = ap - Sym(P, qdd) * S;
        }
        const V6s vp = v - vS;
        for (std::size_t d = 0; d < k.S.size(); ++d) {
            Dof o;
            o.S = vec(P, k.S[d]);
            o.psi = cross_motion(term(StructuredTerm::PsiParentVelocity, vp), o.S);
            o.u = term(StructuredTerm::UAcceleration, cross_motion(ap, o.S)) + term(StructuredTerm::UVelocity, cross_motion(vp, o.psi));
            o.phi = cross_motion(term(StructuredTerm::PhiVelocity, v + vp), o.S);
            dofs[i].push_back(o);
        }
        const Inertia<Sym> I = constant_inertia(k.I);
        IC[i] = inertia(StructuredTerm::OwnInertia, I);
        IdotC[i] = inertia(StructuredTerm::OwnRate, inertia_rate(I, v));
        hC[i] = term(StructuredTerm::OwnMomentum, I * v);
        f[i] = solution(P, x, B.f);
    }
    for (int i = nb - 1; i >= 0; --i) {  // composites over the subtrees, leaves first (parents precede children)
        const int p = sys.kinematics[i].parent;
        if (p < 0) continue;
        IC[p] = IC[p] + inertia(StructuredTerm::ChildInertia, inertia_to_parent(X[i], IC[i]));
        IdotC[p] = IdotC[p] + inertia(StructuredTerm::ChildRate, inertia_to_parent(X[i], IdotC[i]));
        hC[p] = hC[p] + term(StructuredTerm::ChildMomentum, force_to_parent(X[i], hC[i]));
    }
    for (int i = 0; i < nb; ++i)
        for (Dof& o : dofs[i]) {
            o.alpha = IC[i] * o.S;
            o.beta = term(StructuredTerm::BetaRate, IdotC[i] * o.S) - term(StructuredTerm::BetaMomentum, cross_force(o.S, hC[i]));
            o.G = term(StructuredTerm::GForce, cross_force(o.S, f[i])) + term(StructuredTerm::GInertia, IC[i] * o.u) +
                  term(StructuredTerm::GRate, IdotC[i] * o.psi) + term(StructuredTerm::GMomentum, cross_force(o.psi, hC[i]));
            o.H = term(StructuredTerm::HInertia, IC[i] * o.phi) + term(StructuredTerm::HRate, IdotC[i] * o.S) +
                  term(StructuredTerm::HMomentum, cross_force(o.S, hC[i]));
        }
    auto at = [&](std::vector<ir::Id>& M, int row, int col) -> ir::Id& { return M[static_cast<std::size_t>(row) * nv + static_cast<std::size_t>(col)]; };
    // The entries of a body i (its vectors `low`, carried into the frame of ancestor j: `mine`) with
    // ancestor j (whose joint-side vectors are `high`, in the same frame).
    auto pair = [&](int i, const std::vector<Dof>& mine, int j, const std::vector<Dof>& high) {
        const int ri = sys.kinematics[i].v_index, rj = sys.kinematics[j].v_index;
        for (std::size_t a = 0; a < mine.size(); ++a)
            for (std::size_t b = 0; b < high.size(); ++b) {
                const Dof &lo = mine[a], &hi = high[b];
                const int r = ri + static_cast<int>(a), c = rj + static_cast<int>(b);
                at(D.dq, r, c) = (dot(lo.alpha, hi.u) + dot(lo.beta, hi.psi)).id(P);
                at(D.dqd, r, c) = (dot(lo.alpha, hi.phi) + dot(lo.beta, hi.S)).id(P);
                at(D.M, r, c) = dot(lo.alpha, hi.S).id(P);
                if (i == j) continue;
                at(D.dq, c, r) = dot(hi.S, lo.G).id(P);
                at(D.dqd, c, r) = dot(hi.S, lo.H).id(P);
                at(D.M, c, r) = at(D.M, r, c);
            }
    };
    // The pairing frames: a body of `frames` pairs in its own frame; any other body in that of its
    // nearest ancestor in `frames` (the world's, above the roots). W[i] = i_X_frame(i).
    std::vector<int> frame_of(static_cast<std::size_t>(nb), -1);
    std::vector<Xform<Sym>> W(nb, identity_xform<Sym>());  // (the identity for a body of `frames`)
    for (int i = 0; i < nb; ++i) {
        const int p = sys.kinematics[i].parent;
        if (frames[static_cast<std::size_t>(i)]) {
            frame_of[i] = i;
            continue;
        }
        frame_of[i] = p < 0 ? -1 : frame_of[p];
        Xform<Sym> w = p < 0 ? identity_xform<Sym>() : W[p];
        for (const Xform<Sym>& F : X[i]) w = compose(F, w);
        W[i] = w;
    }
    std::vector<std::vector<Dof>> framed(nb);  // each body's vectors in its pairing frame
    for (int i = 0; i < nb; ++i)
        for (const Dof& o : dofs[i]) {
            if (frames[static_cast<std::size_t>(i)]) {
                framed[i].push_back(o);
                continue;
            }
            Dof r;
            for (auto [from, to] : {std::pair{&o.S, &r.S}, {&o.psi, &r.psi}, {&o.u, &r.u}, {&o.phi, &r.phi}}) *to = apply_inverse(W[i], *from);
            for (auto [from, to] : {std::pair{&o.alpha, &r.alpha}, {&o.beta, &r.beta}, {&o.G, &r.G}, {&o.H, &r.H}}) *to = apply_transpose(W[i], *from);
            framed[i].push_back(r);
        }
    for (int i = 0; i < nb; ++i) {
        if (framed[i].empty()) continue;
        std::vector<Dof> mine = framed[i];  // in the frame of body `cur` (the world's: -1)
        int cur = frame_of[i];
        for (int j = i; j >= 0;) {
            if (frame_of[j] != cur) {  // up from frame body `cur` into its parent j's pairing frame
                for (Dof& o : mine)
                    for (V6s* w : {&o.alpha, &o.beta, &o.G, &o.H}) {
                        *w = force_to_parent(X[cur], *w);
                        if (!frames[static_cast<std::size_t>(j)]) *w = apply_transpose(W[j], *w);
                    }
                cur = frame_of[j];
            }
            if (!framed[j].empty()) pair(i, mine, j, framed[j]);
            j = sys.kinematics[j].parent;
        }
    }
    // Mimic joints: the entries above are those of the tree's inverse dynamics in the coordinates of
    // every joint, y = G x (+ offsets) with x the independent ones; the system's torque rows and
    // the Jacobian's columns are the independent coordinates', G^T (d ID / d y) G, and G^T M G for
    // the accelerations. Each mimic's row and column fold into its master's (a mimic's slot in the
    // (3tau) rows is its coupling row, whose right-hand side is zero).
    for (int i = 0; i < nb; ++i) {
        const BodyKinematics& k = sys.kinematics[i];
        if (!k.mimic) continue;
        const int r = k.v_index, m = sys.kinematics[k.master].v_index;
        const ir::Id g = P.constant(k.multiplier);
        for (std::vector<ir::Id>* A : {&D.dq, &D.dqd, &D.M}) {
            for (int c = 0; c < D.nv; ++c) at(*A, m, c) = P.add(at(*A, m, c), P.mul(g, at(*A, r, c)));
            for (int c = 0; c < D.nv; ++c) at(*A, c, m) = P.add(at(*A, c, m), P.mul(g, at(*A, c, r)));
            for (int c = 0; c < D.nv; ++c) at(*A, r, c) = at(*A, c, r) = P.zero();
        }
    }
    return D;
}

std::vector<bool> pairing_frames(const System& sys, PairFrame frame) {
    const std::size_t nb = sys.kinematics.size();
    if (frame == PairFrame::Local) return std::vector<bool>(nb, true);
    // Root: one frame for every pair, that of the root body when the tree has one (a floating base's
    // own frame: its pose never enters), else the world's
    std::vector<bool> f(nb, false);
    int roots = 0;
    for (const BodyKinematics& k : sys.kinematics) roots += k.parent < 0;
    if (roots == 1)
        for (std::size_t i = 0; i < nb; ++i) f[i] = sys.kinematics[i].parent < 0;
    return f;
}

std::vector<ir::Id> contact_row_partials(ir::Program& P, const System& sys, const std::vector<ir::Id>& x, Differentiator& dt) {
    const int nb = static_cast<int>(sys.kinematics.size());
    std::vector<int> body_of_a(static_cast<std::size_t>(sys.n()), -1);  // column -> body, for a_i's columns
    for (int i = 0; i < nb; ++i)
        for (int k = 0; k < 6; ++k) body_of_a[static_cast<std::size_t>(sys.blocks[i].a[k])] = i;
    std::vector<bool> done(static_cast<std::size_t>(nb), false);
    std::vector<V6s> da(static_cast<std::size_t>(nb));
    // da_i = X_i da_p + (dX_i) a_p + dc_i, factor by factor: d(F y) = F dy + (dF) y, with y the
    // solved a_p carried through the factors as a value (its derivative is dy, built alongside)
    auto partial = [&](auto&& self, int i) -> const V6s& {
        if (done[i]) return da[i];
        const BodyKinematics& k = sys.kinematics[i];
        V6s y, dy;
        for (int c = 0; c < 6; ++c) {
            y[c] = k.parent < 0 ? Sym(sys.world_acceleration[c]) : Sym(P, x[static_cast<std::size_t>(sys.blocks[k.parent].a[c])]);
            dy[c] = k.parent < 0 ? Sym(0.0) : self(self, k.parent)[c];
        }
        for (const TransformFactor& F : k.factors) {
            const Xform<Sym> X = factor_xform(P, F);
            V6s dFy = zero6<Sym>();
            if (F.rotation) {
                Mat3<Sym> dE;
                for (int r = 0; r < 3; ++r)
                    for (int c = 0; c < 3; ++c) dE(r, c) = Sym(P, dt.d(F.E[r][c]));
                dFy = {dE * y.w, dE * y.l};
            } else {  // [w; v - r x w]: d = [0; -dr x w]
                const Vec3<Sym> dr{{Sym(P, dt.d(F.r[0])), Sym(P, dt.d(F.r[1])), Sym(P, dt.d(F.r[2]))}};
                dFy.l = zero3<Sym>() - cross(dr, y.w);
            }
            dy = apply(X, dy) + dFy;
            y = apply(X, y);
        }
        for (int c = 0; c < 6; ++c) dy[c] = dy[c] + Sym(P, dt.d(k.c[c]));
        da[i] = dy;
        done[i] = true;
        return da[i];
    };
    std::vector<ir::Id> out;
    for (const ContactBlock& cb : sys.contacts)
        for (int row : cb.rows) {
            ir::Id r = dt.d(sys.b.value[static_cast<std::size_t>(row)]);
            for (const auto& [col, e] : sys.entries[static_cast<std::size_t>(row)]) {
                r = P.add(r, P.mul(dt.d(e), x[static_cast<std::size_t>(col)]));
                if (const int i = body_of_a[static_cast<std::size_t>(col)]; i >= 0) {
                    const int c = static_cast<int>(std::find(sys.blocks[i].a.begin(), sys.blocks[i].a.end(), col) - sys.blocks[i].a.begin());
                    r = P.add(r, P.mul(e, partial(partial, i)[c].id(P)));
                }
            }
            out.push_back(r);
        }
    return out;
}

}  // namespace nelu
