// responses.cpp: the compiled problem kinds osim and iwim against the seed-algorithm references and
// the dense route (see responses.hpp).
#include "responses.hpp"

#include <benchmark/benchmark.h>
#include <yaml-cpp/yaml.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "load.hpp"
#include "nelu/iwim.hpp"
#include "nelu/osim.hpp"
#include "nelu/reference.hpp"

namespace nelu::bench {
namespace {

constexpr int kStates = 16;  // as bench_main.cpp: the same random states (seed 6) as the ID/FD benchmark
constexpr std::uint64_t kSeed = 6;
constexpr double kOsimTolerance = 1e-9;      // relative, double
constexpr double kIwimTolerance = 1e-8;      // forward, per column, double
constexpr double kBackwardTolerance = 1e-12;  // iwim, when the forward check fails
constexpr double kFloatTolerance = 1e-2;     // float: gross errors only (forward; iwim also backward 1e-5)
constexpr double kFloatBackwardTolerance = 1e-5;

using LD = long double;
using MatLD = Eigen::Matrix<LD, Eigen::Dynamic, Eigen::Dynamic>;
using MatRow = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A point of the spec: body, offset in body coordinates; its frame has the link's axes.
struct Point {
    int body = -1;
    Vec3<double> offset{{0, 0, 0}};
    int dof = 6;  // osim: 6 or 3; iwim contacts: 3 (a force)
};

/// One osim / iwim case: the robot, the states, what the spec asks and the truth.
struct Case {
    std::string kind, name, solver;
    Model model;
    std::vector<State> states;
    std::vector<Point> points;  // osim: operational points; iwim: contact forces
    std::vector<int> slots;     // iwim: actuated velocity slots
    int nout = 0, ncols = 0;    // iwim: columns of [qdd_0, B^] = 1 + inputs
    std::vector<std::vector<double>> truth;  // the dense route in long double, the solver's layout
    std::vector<MatLD> M, rhs;               // iwim: M and [-h, B] per state (long double), for the backward error
    double truth_spread = 0;  // the truth against the reference recursion run in long double (same measure as the check)
};

class Contender {
public:
    virtual ~Contender() = default;
    virtual std::string name() const = 0;
    virtual bool single_precision() const { return false; }
    virtual void run(int k) = 0;                          // timed
    virtual void result(std::vector<double>& x) const = 0;  // not timed: the solver's layout
};

struct ResponseSetImpl {
    std::vector<std::unique_ptr<Case>> cases;
    std::vector<std::vector<std::unique_ptr<Contender>>> contenders;
};

// ------------------------------------------------------------------------------------------------
// the spec, read here independently of the compiler

Point read_point(const YAML::Node& n, const LoadResult& loaded, const std::string& spec, int default_dof) {
    const std::string link = n["link"].as<std::string>();
    auto it = loaded.links.find(link);
    if (it == loaded.links.end() || it->second.body < 0) throw std::runtime_error(spec + ": no movable link " + link);
    const Xform<double>& X = it->second.X_link_body;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            if (X.E(r, c) != (r == c ? 1.0 : 0.0))
                throw std::runtime_error(spec + ": link " + link + " is rotated in its body's frame; the harness supports merged links with the body's axes only");
    Point p;
    p.body = it->second.body;
    for (int k = 0; k < 3; ++k) p.offset[k] = X.r[k] + (n["point"] ? n["point"][k].as<double>() : 0.0);
    p.dof = n["dof"] ? n["dof"].as<int>() : default_dof;
    return p;
}

Xform<double> point_xform(const Point& p) { return {identity3<double>(), p.offset}; }

std::vector<OpPoint> op_points(const Case& c) {
    std::vector<OpPoint> ops;
    for (const Point& p : c.points) {
        OpPoint o;
        o.point.body = p.body, o.point.offset = p.offset, o.point.axes = PointAxes::Link;
        o.position_only = p.dof == 3;
        ops.push_back(o);
    }
    return ops;
}

InputSet input_set(const Case& c) {
    InputSet in;
    in.dofs = c.slots;
    for (const Point& p : c.points) in.forces.push_back(BodyPoint{p.body, p.offset, PointAxes::Link});
    return in;
}

// ------------------------------------------------------------------------------------------------
// the dense route, in any scalar: rows of the point Jacobian, M, B

/// The 6 x nv Jacobian of the point's frame (link axes at the point): [omega; v_p] = J qd.
template <class S, class Mat> void point_jacobian(const Model& m, const S* q, const Point& p, Mat& J) {
    const std::vector<SVec<S>> Jb = body_jacobian(m, q, p.body);
    const Xform<S> X = cast<S>(point_xform(p));
    for (int v = 0; v < m.nv; ++v) {
        const SVec<S> col = apply(X, Jb[v]);
        for (int r = 0; r < 6; ++r) J(r, v) = col[r];
    }
}

/// The truth of one state, and for iwim M and [-h, B], in long double.
void make_truth(Case& c, const State& s) {
    const Model& m = c.model;
    const int nv = m.nv;
    std::vector<LD> q(s.q.begin(), s.q.end()), qd(s.qd.begin(), s.qd.end()), Mv(nv * nv), h(nv);
    crba(m, q.data(), Mv.data());
    MatLD M(nv, nv);
    for (int i = 0; i < nv; ++i)
        for (int j = 0; j < nv; ++j) M(i, j) = Mv[i * nv + j];
    Eigen::LDLT<MatLD> ldlt(M);
    std::vector<double> out;
    MatLD J6(6, nv);
    if (c.kind == "OSIM") {
        int d = 0;
        for (const Point& p : c.points) d += p.dof;
        MatLD J(d, nv);
        int row = 0;
        for (const Point& p : c.points) {
            point_jacobian(m, q.data(), p, J6);
            J.middleRows(row, p.dof) = J6.bottomRows(p.dof);
            row += p.dof;
        }
        const MatLD L = J * ldlt.solve(MatLD(J.transpose()));
        for (int r = 0; r < d; ++r)
            for (int k = 0; k < d; ++k) out.push_back(double(L(r, k)));
        std::vector<LD> ref(d * d);  // how well the truth is known: Chang & Khatib in long double
        osim_inverse(m, q.data(), op_points(c), ref.data());
        LD diff = 0, scale = 0;
        for (int r = 0; r < d; ++r)
            for (int k = 0; k < d; ++k) diff = std::max(diff, std::abs(ref[r * d + k] - L(r, k))), scale = std::max(scale, std::abs(L(r, k)));
        c.truth_spread = std::max(c.truth_spread, double(diff / scale));
    } else {
        nonlinear_effects(m, q.data(), qd.data(), static_cast<const SVec<LD>*>(nullptr), h.data());
        MatLD rhs = MatLD::Zero(nv, c.ncols);
        for (int i = 0; i < nv; ++i) rhs(i, 0) = -h[i];
        int col = 1;
        for (int slot : c.slots) rhs(slot, col++) = 1;
        for (const Point& p : c.points) {
            point_jacobian(m, q.data(), p, J6);
            rhs.middleCols(col, 3) = J6.bottomRows(3).transpose();
            col += 3;
        }
        const MatLD x = ldlt.solve(rhs);
        const InputSet in = input_set(c);  // how well the truth is known: the implicit inversion in long double
        std::vector<LD> Bhat(nv * in.size()), qdd0(nv);
        iwim(m, q.data(), qd.data(), static_cast<const SVec<LD>*>(nullptr), in, Bhat.data(), qdd0.data());
        for (int k = 0; k < c.ncols; ++k) {
            LD diff = 0, scale = 0;
            for (int i = 0; i < nv; ++i) {
                const LD v = k == 0 ? qdd0[i] : Bhat[i * in.size() + k - 1];
                diff = std::max(diff, std::abs(v - x(i, k))), scale = std::max(scale, std::abs(x(i, k)));
            }
            c.truth_spread = std::max(c.truth_spread, double(diff / scale));
        }
        for (int k = 0; k < c.ncols; ++k)
            for (int i = 0; i < nv; ++i) out.push_back(double(x(i, k)));
        c.M.push_back(M), c.rhs.push_back(rhs);
    }
    if (static_cast<int>(out.size()) != c.nout)
        throw std::runtime_error(c.kind + "/" + c.name + ": the spec gives " + std::to_string(out.size()) +
                                 " outputs, the solver " + std::to_string(c.nout));
    c.truth.push_back(out);
}

// ------------------------------------------------------------------------------------------------
// contenders

template <class T> class Generated final : public Contender {
public:
    Generated(const Case& c, SolverFn<T> fn) : fn_(fn), out_(c.nout) {
        for (const State& s : c.states) q_.emplace_back(s.q.begin(), s.q.end()), qd_.emplace_back(s.qd.begin(), s.qd.end());
    }
    std::string name() const override { return sizeof(T) == sizeof(double) ? "generated_double" : "generated_float"; }
    bool single_precision() const override { return sizeof(T) < sizeof(double); }
    void run(int k) override { status_ = fn_(q_[k].data(), qd_[k].data(), in_, out_.data()); }  // NIN 0
    void result(std::vector<double>& x) const override {
        x.resize(out_.size());
        for (size_t i = 0; i < out_.size(); ++i) x[i] = status_ == 0 ? double(out_[i]) : NAN;
    }

private:
    SolverFn<T> fn_;
    std::vector<std::vector<T>> q_, qd_;
    T in_[1] = {T(0)};
    std::vector<T> out_;
    int status_ = 0;
};

/// Chang & Khatib: osim_inverse (reference, allocates).
class ReferenceOsim final : public Contender {
public:
    explicit ReferenceOsim(const Case& c) : c_(c), points_(op_points(c)), out_(c.nout) {}
    std::string name() const override { return "reference"; }
    void run(int k) override { osim_inverse(c_.model, c_.states[k].q.data(), points_, out_.data()); }
    void result(std::vector<double>& x) const override { x = out_; }

private:
    const Case& c_;
    std::vector<OpPoint> points_;
    std::vector<double> out_;
};

/// Kroeg et al.: implicit inversion (iwim) or the extended unit-force method (iwim_unit_force).
class ReferenceIwim final : public Contender {
public:
    ReferenceIwim(const Case& c, bool unit_force)
        : c_(c), unit_force_(unit_force), in_(input_set(c)), Bhat_(c.model.nv * in_.size()), qdd0_(c.model.nv) {}
    std::string name() const override { return unit_force_ ? "unit_force" : "reference"; }
    void run(int k) override {
        const State& s = c_.states[k];
        if (unit_force_) iwim_unit_force(c_.model, s.q.data(), s.qd.data(), static_cast<const SVec<double>*>(nullptr), in_, Bhat_.data(), qdd0_.data());
        else iwim(c_.model, s.q.data(), s.qd.data(), static_cast<const SVec<double>*>(nullptr), in_, Bhat_.data(), qdd0_.data());
    }
    void result(std::vector<double>& x) const override {  // Bhat is nv x m row major
        const int nv = c_.model.nv, m = in_.size();
        x = qdd0_;
        for (int col = 0; col < m; ++col)
            for (int i = 0; i < nv; ++i) x.push_back(Bhat_[i * m + col]);
    }

private:
    const Case& c_;
    bool unit_force_;
    InputSet in_;
    std::vector<double> Bhat_, qdd0_;
};

/// The dense route in double, storage allocated once (CRBA, RNEA and body_jacobian are the
/// reference implementations of nelu/reference.hpp and allocate their own temporaries).
///   osim: M = L L^T (Eigen LLT), Y = L^-1 J^T in place, Lambda^-1 = Y^T Y.
///   iwim: M = L D L^T (Eigen LDLT), [qdd_0, B^] = M^-1 [-h, B] in place (h: RNEA with qdd = 0).
class Dense final : public Contender {
public:
    explicit Dense(const Case& c) : c_(c), nv_(c.model.nv), Mv_(nv_ * nv_), h_(nv_), M_(nv_, nv_), J6_(6, nv_), llt_(nv_), ldlt_(nv_) {
        if (c.kind == "OSIM") {
            for (const Point& p : c.points) d_ += p.dof;
            Y_.resize(nv_, d_), out_.resize(d_, d_);
        } else {
            Y_.resize(nv_, c.ncols);
        }
    }
    std::string name() const override { return "dense"; }
    void run(int k) override {
        const State& s = c_.states[k];
        crba(c_.model, s.q.data(), Mv_.data());
        M_ = Eigen::Map<const MatRow>(Mv_.data(), nv_, nv_);
        if (c_.kind == "OSIM") {
            int col = 0;
            for (const Point& p : c_.points) {
                point_jacobian(c_.model, s.q.data(), p, J6_);
                Y_.middleCols(col, p.dof) = J6_.bottomRows(p.dof).transpose();
                col += p.dof;
            }
            llt_.compute(M_);
            llt_.matrixL().solveInPlace(Y_);
            out_.noalias() = Y_.transpose() * Y_;
        } else {
            nonlinear_effects(c_.model, s.q.data(), s.qd.data(), static_cast<const SVec<double>*>(nullptr), h_.data());
            Y_.setZero();
            for (int i = 0; i < nv_; ++i) Y_(i, 0) = -h_[i];
            int col = 1;
            for (int slot : c_.slots) Y_(slot, col++) = 1;
            for (const Point& p : c_.points) {
                point_jacobian(c_.model, s.q.data(), p, J6_);
                Y_.middleCols(col, 3) = J6_.bottomRows(3).transpose();
                col += 3;
            }
            ldlt_.compute(M_);
            ldlt_.solveInPlace(Y_);
        }
    }
    void result(std::vector<double>& x) const override {
        x.clear();
        if (c_.kind == "OSIM") {
            for (int r = 0; r < d_; ++r)
                for (int k = 0; k < d_; ++k) x.push_back(out_(r, k));
        } else {
            for (int k = 0; k < Y_.cols(); ++k)
                for (int i = 0; i < nv_; ++i) x.push_back(Y_(i, k));
        }
    }

private:
    const Case& c_;
    int nv_, d_ = 0;
    std::vector<double> Mv_, h_;
    Eigen::MatrixXd M_, J6_, Y_, out_;
    Eigen::LLT<Eigen::MatrixXd> llt_;
    Eigen::LDLT<Eigen::MatrixXd> ldlt_;
};

// ------------------------------------------------------------------------------------------------

std::unique_ptr<Case> make_case(const ResponseEntry& e) {
    auto c = std::make_unique<Case>();
    c->kind = e.kind, c->name = e.name, c->solver = e.solver, c->nout = e.nout;
    LoadOptions options;
    options.floating_base = e.floating;
    const LoadResult loaded = load_urdf_file(e.urdf, options);
    c->model = loaded.model;
    const Model& m = c->model;
    const YAML::Node spec = YAML::LoadFile(e.spec);
    if (c->kind == "OSIM") {
        for (const YAML::Node& n : spec["operational_points"]) c->points.push_back(read_point(n, loaded, e.spec, 6));
    } else {
        const YAML::Node in = spec["inputs"];
        if (const YAML::Node j = in["joints"]) {  // in body order, as the compiler orders them
            std::vector<int> bodies;
            if (j.IsScalar() && j.as<std::string>() == "all") {
                for (int b = 0; b < m.num_bodies(); ++b)
                    if (m.bodies[b].nv() > 0 && m.bodies[b].type != JointType::Floating) bodies.push_back(b);
            } else {
                for (const YAML::Node& n : j) {
                    int found = -1;
                    for (int b = 0; b < m.num_bodies(); ++b)
                        if (m.bodies[b].joint_name == n.as<std::string>()) found = b;
                    if (found < 0) throw std::runtime_error(std::string(e.spec) + ": no joint " + n.as<std::string>());
                    bodies.push_back(found);
                }
                std::sort(bodies.begin(), bodies.end());
            }
            for (int b : bodies)
                for (int k = 0; k < m.bodies[b].nv(); ++k) c->slots.push_back(m.bodies[b].v_index + k);
        }
        if (const YAML::Node contacts = in["contacts"])
            for (const YAML::Node& n : contacts) {
                Point p = read_point(n, loaded, e.spec, 3);
                p.dof = 3;
                c->points.push_back(p);
            }
        c->ncols = 1 + static_cast<int>(c->slots.size() + 3 * c->points.size());
    }
    std::mt19937_64 rng(kSeed);
    for (int k = 0; k < kStates; ++k) c->states.push_back(random_state(m, rng));
    for (const State& s : c->states) make_truth(*c, s);
    return c;
}

/// Errors of a contender against the truth over every state: forward (relative; iwim per column)
/// and, for iwim, backward.
std::pair<double, double> errors(Case& c, Contender& x) {
    double fwd = 0, bwd = 0;
    std::vector<double> out;
    const int nv = c.model.nv;
    for (int k = 0; k < kStates; ++k) {
        x.run(k), x.result(out);
        const std::vector<double>& t = c.truth[k];
        if (out.size() != t.size()) return {INFINITY, INFINITY};
        const int block = c.kind == "OSIM" ? static_cast<int>(t.size()) : nv;
        for (size_t b = 0; b < t.size(); b += block) {
            double diff = 0, scale = 0;
            for (size_t i = b; i < b + block; ++i) {
                diff = std::isfinite(out[i]) ? std::max(diff, std::abs(out[i] - t[i])) : INFINITY;
                scale = std::max(scale, std::abs(t[i]));
            }
            fwd = std::max(fwd, scale > 0 ? diff / scale : diff);
        }
        if (c.kind == "IWIM") {  // |M x - b| / (|M| |x| + |b|), column by column, in long double
            const MatLD& M = c.M[k];
            const LD Mnorm = M.cwiseAbs().rowwise().sum().maxCoeff();
            for (int col = 0; col < c.ncols; ++col) {
                Eigen::Matrix<LD, Eigen::Dynamic, 1> xv(nv);
                for (int i = 0; i < nv; ++i) xv(i) = out[col * nv + i];
                const LD res = (M * xv - c.rhs[k].col(col)).cwiseAbs().maxCoeff();
                const LD scale = Mnorm * xv.cwiseAbs().maxCoeff() + c.rhs[k].col(col).cwiseAbs().maxCoeff();
                const double e = double(scale > 0 ? res / scale : res);
                bwd = std::max(bwd, std::isfinite(e) ? e : INFINITY);
            }
        }
    }
    return {fwd, bwd};
}

}  // namespace

struct ResponseSet : ResponseSetImpl {};
void ResponseSetDeleter::operator()(ResponseSet* p) const { delete p; }

ResponseSetPtr make_responses(const ResponseEntry* entries, int count) {
    ResponseSetPtr set(new ResponseSet);
    for (int i = 0; i < count; ++i) {
        const ResponseEntry& e = entries[i];
        set->cases.push_back(make_case(e));
        Case& c = *set->cases.back();
        std::vector<std::unique_ptr<Contender>> xs;
        xs.push_back(std::make_unique<Generated<double>>(c, e.fn));
        xs.push_back(std::make_unique<Generated<float>>(c, e.fn_f));
        if (c.kind == "OSIM") {
            xs.push_back(std::make_unique<ReferenceOsim>(c));
        } else {
            xs.push_back(std::make_unique<ReferenceIwim>(c, false));
            xs.push_back(std::make_unique<ReferenceIwim>(c, true));
        }
        xs.push_back(std::make_unique<Dense>(c));
        set->contenders.push_back(std::move(xs));
        const std::string key = c.kind + "/" + c.name;
        char text[128];
        std::snprintf(text, sizeof text, "%s nv=%d nout=%d%s", c.solver.c_str(), c.model.nv, c.nout,
                      c.kind == "IWIM" ? (" inputs=" + std::to_string(c.ncols - 1)).c_str() : "");
        benchmark::AddCustomContext("response/" + key, text);
        std::snprintf(text, sizeof text, "%.3g", c.truth_spread);
        benchmark::AddCustomContext("truth_spread/" + key, text);
        std::fprintf(stderr, "check %-52s the truth (dense, long double) vs the reference recursion in long double: %s\n",
                     (key + "/truth").c_str(), text);
    }
    return set;
}

bool check_responses(ResponseSet& set) {
    bool ok = true;
    for (size_t i = 0; i < set.cases.size(); ++i) {
        Case& c = *set.cases[i];
        for (auto& x : set.contenders[i]) {
            const auto [fwd, bwd] = errors(c, *x);
            const bool single = x->single_precision();
            const bool pass = c.kind == "OSIM"
                                  ? fwd <= (single ? kFloatTolerance : kOsimTolerance)
                                  : (fwd <= (single ? kFloatTolerance : kIwimTolerance) ||
                                     bwd <= (single ? kFloatBackwardTolerance : kBackwardTolerance));
            const std::string what = c.kind + "/" + c.name + "/" + x->name();
            char text[64];
            std::snprintf(text, sizeof text, "%.3g", fwd);
            benchmark::AddCustomContext("check/" + what, text);
            std::string line = std::string("relative error ") + text;
            if (c.kind == "IWIM") {
                std::snprintf(text, sizeof text, "%.3g", bwd);
                benchmark::AddCustomContext("check_backward/" + what, text);
                line += std::string(", backward error ") + text;
            }
            std::fprintf(stderr, "check %-52s %s%s\n", what.c_str(), line.c_str(), pass ? "" : "  DISAGREES");
            ok = ok && pass;
        }
    }
    return ok;
}

void register_responses(ResponseSet& set) {
    for (size_t i = 0; i < set.cases.size(); ++i)
        for (auto& x : set.contenders[i]) {
            Contender* contender = x.get();
            const std::string name = set.cases[i]->kind + "/" + set.cases[i]->name + "/" + x->name();
            benchmark::RegisterBenchmark(name.c_str(), [contender](benchmark::State& st) {
                int k = 0;
                for (auto _ : st) {
                    contender->run(k);
                    benchmark::ClobberMemory();
                    k = (k + 1) & (kStates - 1);
                }
            });
        }
}

}  // namespace nelu::bench
