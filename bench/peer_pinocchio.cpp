// peer_pinocchio.cpp: Pinocchio 3.7.0 (header-only, ../shared/peers/pinocchio-3.7.0; its URDF parser
// compiled by bench/CMakeLists.txt) on the same URDF.
//
// pinocchio::urdf::buildModelFromXML makes one joint per URDF joint that moves (fixed links merged
// into their parent, as nelu merges them), whose frame is the child link's frame, so the external
// wrench of nelu's body i is the force on the joint of that body in its own frame. A floating base
// is Pinocchio's JointModelFreeFlyer ("root_joint"). Gravity from nelu's model; <mimic> tags are not
// parsed (Pinocchio's default), as the benchmark robots have none.
//
// Conventions translated when the inputs are made and the results read (not timed): spatial vectors
// are linear first ([v; w], [f; n]), so a free-flyer's velocity, acceleration and generalized force
// are nelu's with their two halves swapped (both are body-frame twists and wrenches; its
// configuration [x y z qx qy qz qw] is nelu's); a continuous joint (JointModelRUB*) has the two
// coordinates (cos q, sin q).
//
// What is timed (state prepared beforehand as Pinocchio's Eigen vectors and forces):
//   ID  pinocchio  pinocchio::rnea(model, data, q, v, a, fext): tau, external wrenches included.
//   FD  pinocchio  pinocchio::aba(model, data, q, v, tau, fext): the articulated-body algorithm in
//                  Pinocchio's default (LOCAL) convention, called as the function that aba() calls
//                  for it (pinocchio::impl::abaLocalConvention): aba() dispatches on the convention
//                  at run time, which instantiates the WORLD variant too, a third of this file's
//                  compile time (Pinocchio is header-only here, its algorithms instantiated for
//                  every joint type in every file that calls them).
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include <cmath>
#include <stdexcept>

#include "engine.hpp"

namespace nelu::bench {
namespace {

/// Pinocchio's velocity slot of component c of body b's joint, whose first slot is idx_v: a free
/// flyer's angular and linear halves are swapped.
int pinocchio_slot(const Body& b, int idx_v, int c) { return idx_v + (b.type == JointType::Floating ? (c + 3) % 6 : c); }

class PinocchioEngine final : public Engine {
public:
    PinocchioEngine(const Robot& r, const Workload& work, pinocchio::Model model) : model_(r.model), pin_(std::move(model)) {
        if (pin_.nv != r.model.nv)
            throw std::runtime_error("pinocchio: " + std::to_string(pin_.nv) + " velocities, nelu " + std::to_string(r.model.nv));
        pin_.gravity = pinocchio::Motion(Eigen::Vector3d(r.model.gravity.l[0], r.model.gravity.l[1], r.model.gravity.l[2]),
                                         Eigen::Vector3d::Zero());
        double mass = 0, mass_pin = 0;
        for (const Body& b : r.model.bodies) mass += b.I.m;
        for (pinocchio::JointIndex j = 1; j < static_cast<pinocchio::JointIndex>(pin_.njoints); ++j) mass_pin += pin_.inertias[j].mass();
        if (std::abs(mass - mass_pin) > 1e-12 * mass)
            throw std::runtime_error("pinocchio: moving mass " + std::to_string(mass_pin) + ", nelu " + std::to_string(mass));
        for (const Body& b : r.model.bodies) {
            const std::string name = b.type == JointType::Floating ? "root_joint" : b.joint_name;
            if (b.nv() == 0 || !pin_.existJointName(name))
                throw std::runtime_error("pinocchio: no joint " + name + " of body " + b.name);
            const pinocchio::JointIndex j = pin_.getJointId(name);
            if (pin_.nvs[j] != b.nv()) throw std::runtime_error("pinocchio: joint " + name + " has another number of velocities");
            joint_.push_back(j);
        }
        for (const State& s : work.states) inputs_.push_back(input(s));
        data_ = pinocchio::Data(pin_);
    }
    std::string name() const override { return "pinocchio"; }
    void id(int k) override {
        const Input& in = inputs_[k];
        pinocchio::rnea(pin_, data_, in.q, in.v, in.a, in.fext);
        out_ = &data_.tau;
    }
    void fd(int k) override {
        const Input& in = inputs_[k];
        pinocchio::impl::abaLocalConvention(pin_, data_, in.q, in.v, in.tau, in.fext);
        out_ = &data_.ddq;
    }
    void id_result(double* tau) const override { result(tau); }
    void fd_result(double* qdd) const override { result(qdd); }

private:
    struct Input {
        Eigen::VectorXd q, v, a, tau;
        pinocchio::container::aligned_vector<pinocchio::Force> fext;  // per Pinocchio joint, joint frame
    };
    Input input(const State& s) const {
        Input in{Eigen::VectorXd(pin_.nq), Eigen::VectorXd(pin_.nv), Eigen::VectorXd(pin_.nv), Eigen::VectorXd(pin_.nv),
                 pinocchio::container::aligned_vector<pinocchio::Force>(pin_.njoints, pinocchio::Force::Zero())};
        for (size_t i = 0; i < joint_.size(); ++i) {
            const Body& b = model_.bodies[i];
            const pinocchio::JointIndex j = joint_[i];
            const int iq = pin_.idx_qs[j], iv = pin_.idx_vs[j];
            if (pin_.nqs[j] == 2 && b.nq() == 1) {  // continuous: (cos, sin)
                in.q[iq] = std::cos(s.q[b.q_index]), in.q[iq + 1] = std::sin(s.q[b.q_index]);
            } else {
                for (int c = 0; c < b.nq(); ++c) in.q[iq + c] = s.q[b.q_index + c];
            }
            for (int c = 0; c < b.nv(); ++c) {
                const int p = pinocchio_slot(b, iv, c);
                in.v[p] = s.qd[b.v_index + c], in.a[p] = s.qdd[b.v_index + c], in.tau[p] = s.tau[b.v_index + c];
            }
            const SVec<double>& f = s.fext[i];
            in.fext[j] = pinocchio::Force(Eigen::Vector3d(f.l[0], f.l[1], f.l[2]), Eigen::Vector3d(f.w[0], f.w[1], f.w[2]));
        }
        return in;
    }
    void result(double* x) const {
        for (size_t i = 0; i < joint_.size(); ++i) {
            const Body& b = model_.bodies[i];
            for (int c = 0; c < b.nv(); ++c) x[b.v_index + c] = (*out_)[pinocchio_slot(b, pin_.idx_vs[joint_[i]], c)];
        }
    }
    const Model& model_;
    pinocchio::Model pin_;
    pinocchio::Data data_;
    std::vector<pinocchio::JointIndex> joint_;  // per nelu body
    std::vector<Input> inputs_;
    const Eigen::VectorXd* out_ = nullptr;  // data_.tau or data_.ddq: the last call's result
};

}  // namespace

std::vector<EnginePtr> make_pinocchio(const Robot& robot, const Workload& work, std::vector<Unavailable>&) {
    pinocchio::Model model;
    if (robot.floating)
        pinocchio::urdf::buildModelFromXML(robot.urdf_text, pinocchio::JointModelFreeFlyer(), model);
    else
        pinocchio::urdf::buildModelFromXML(robot.urdf_text, model);
    std::vector<EnginePtr> engines;
    engines.push_back(std::make_unique<PinocchioEngine>(robot, work, std::move(model)));
    return engines;
}

}  // namespace nelu::bench
