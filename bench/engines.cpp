// engines.cpp: nelu's own contenders, the reference algorithms and the generated solvers.
#include <algorithm>
#include <cmath>

#include "engine.hpp"
#include "nelu/reference.hpp"

namespace nelu::bench {

std::vector<double> solver_input(const Model& m, const std::vector<double>& head, const State& s) {
    std::vector<double> in(head);
    for (int i = 0; i < m.num_bodies(); ++i)
        for (int c = 0; c < 6; ++c) in.push_back(s.fext[i][c]);
    return in;
}

namespace {

/// Reference RNEA / ABA: the templates of nelu/reference.hpp as they are (they allocate).
class Reference final : public Engine {
public:
    Reference(const Robot& r, const Workload& w) : model_(r.model), work_(w), out_(r.model.nv) {}
    std::string name() const override { return "reference"; }
    void id(int k) override {
        const State& s = work_.states[k];
        rnea(model_, s.q.data(), s.qd.data(), s.qdd.data(), s.fext.data(), out_.data());
    }
    void fd(int k) override {
        const State& s = work_.states[k];
        aba(model_, s.q.data(), s.qd.data(), s.tau.data(), s.fext.data(), out_.data());
    }
    void id_result(double* tau) const override { std::copy(out_.begin(), out_.end(), tau); }
    void fd_result(double* qdd) const override { std::copy(out_.begin(), out_.end(), qdd); }

private:
    const Model& model_;
    const Workload& work_;
    std::vector<double> out_;
};

/// A generated solver pair: inputs converted to T once, one flat array per state. With zero_fx,
/// the solvers of specs/id_zero_fx.yaml and fd_zero_fx.yaml: in = qdd (tau) alone.
template <class T> class Generated final : public Engine {
public:
    Generated(const Robot& r, const Workload& w, SolverFn<T> id, SolverFn<T> fd, bool zero_fx)
        : id_fn_(id), fd_fn_(fd), zero_fx_(zero_fx), out_(r.model.nv) {
        for (const State& s : w.states) {
            q_.push_back(convert(s.q));
            qd_.push_back(convert(s.qd));
            in_id_.push_back(convert(zero_fx ? s.qdd : solver_input(r.model, s.qdd, s)));
            in_fd_.push_back(convert(zero_fx ? s.tau : solver_input(r.model, s.tau, s)));
        }
    }
    std::string name() const override {
        return std::string(zero_fx_ ? "generated_zero_fx_" : "generated_") + (sizeof(T) == sizeof(double) ? "double" : "float");
    }
    bool takes_fext() const override { return !zero_fx_; }
    bool single_precision() const override { return sizeof(T) < sizeof(double); }
    void id(int k) override { status_ = id_fn_(q_[k].data(), qd_[k].data(), in_id_[k].data(), out_.data()); }
    void fd(int k) override { status_ = fd_fn_(q_[k].data(), qd_[k].data(), in_fd_[k].data(), out_.data()); }
    void id_result(double* tau) const override { result(tau); }
    void fd_result(double* qdd) const override { result(qdd); }

private:
    static std::vector<T> convert(const std::vector<double>& v) { return std::vector<T>(v.begin(), v.end()); }
    void result(double* x) const {
        for (size_t i = 0; i < out_.size(); ++i) x[i] = status_ == 0 ? double(out_[i]) : NAN;
    }
    SolverFn<T> id_fn_, fd_fn_;
    bool zero_fx_;
    std::vector<std::vector<T>> q_, qd_, in_id_, in_fd_;
    std::vector<T> out_;
    int status_ = 0;
};

}  // namespace

EnginePtr make_reference(const Robot& robot, const Workload& work) {
    return std::make_unique<Reference>(robot, work);
}
EnginePtr make_generated_double(const Robot& robot, const Workload& work, SolverFn<double> id, SolverFn<double> fd,
                                bool zero_fx) {
    return std::make_unique<Generated<double>>(robot, work, id, fd, zero_fx);
}
EnginePtr make_generated_float(const Robot& robot, const Workload& work, SolverFn<float> id, SolverFn<float> fd,
                               bool zero_fx) {
    return std::make_unique<Generated<float>>(robot, work, id, fd, zero_fx);
}

}  // namespace nelu::bench
