// peer_dart.cpp: DART (Debian libdart-dev 6.12, libdart-utils-urdf-dev) on the same URDF.
//
// DartLoader makes one body node per URDF link (fixed joints become weld joints); the root link is
// welded to the world, or for the floating base attached by DART's FreeJoint, whose coordinates
// are the rotation vector and translation of the base, and whose velocity and acceleration are the
// body-frame [w; v] twist and its derivative, as nelu's. Gravity from nelu's model; every degree of
// freedom's damping, spring stiffness and Coulomb friction set to zero (DART 6.12 has no armature). External
// wrenches are set on the body nodes in their own frames at their origins.
//
// What is timed (per call: the state set on the skeleton, which also invalidates DART's cached
// kinematics, so each call recomputes it):
//   ID  dart  setPositions, setVelocities, setAccelerations, body-node external forces and torques,
//             Skeleton::computeInverseDynamics(with external forces, no damping, no springs).
//   FD  dart  setPositions, setVelocities, setForces, external forces and torques,
//             Skeleton::computeForwardDynamics (articulated-body algorithm).
#include <dart/dynamics/BodyNode.hpp>
#include <dart/dynamics/DegreeOfFreedom.hpp>
#include <dart/dynamics/FreeJoint.hpp>
#include <dart/dynamics/Skeleton.hpp>
#include <dart/utils/urdf/DartLoader.hpp>

#include <cmath>
#include <stdexcept>

#include "engine.hpp"

namespace nelu::bench {
namespace {

class DartEngine final : public Engine {
public:
    DartEngine(const Robot& r, const Workload& work, dart::dynamics::SkeletonPtr skel) : model_(r.model), skel_(std::move(skel)) {
        const int n = static_cast<int>(skel_->getNumDofs());
        if (n != r.model.nv) throw std::runtime_error("dart: " + std::to_string(n) + " dofs, nelu " + std::to_string(r.model.nv));
        skel_->setGravity(Eigen::Vector3d(r.model.gravity.l[0], r.model.gravity.l[1], r.model.gravity.l[2]));
        for (int i = 0; i < n; ++i) {
            dart::dynamics::DegreeOfFreedom* dof = skel_->getDof(i);
            dof->setDampingCoefficient(0), dof->setSpringStiffness(0), dof->setCoulombFriction(0);
            dof->setPositionLimits(-1e30, 1e30), dof->setVelocityLimits(-1e30, 1e30), dof->setForceLimits(-1e30, 1e30);
            dof->getJoint()->setActuatorType(dart::dynamics::Joint::FORCE);
        }
        double mass = 0, mass_dart = 0;  // of the bodies that move: nelu merges the others into the world
        for (const Body& b : r.model.bodies) mass += b.I.m;
        for (size_t i = 0; i < skel_->getNumBodyNodes(); ++i)
            if (skel_->getBodyNode(i)->getNumDependentGenCoords() > 0) mass_dart += skel_->getBodyNode(i)->getMass();
        if (std::abs(mass - mass_dart) > 1e-12 * mass)
            throw std::runtime_error("dart: moving mass " + std::to_string(mass_dart) + ", nelu " + std::to_string(mass));
        for (const Body& b : r.model.bodies) {
            dart::dynamics::BodyNode* bn = skel_->getBodyNode(b.name);
            if (!bn) throw std::runtime_error("dart: no body node " + b.name);
            nodes_.push_back(bn);
            dart::dynamics::Joint* j = b.type == JointType::Floating ? skel_->getRootJoint() : skel_->getJoint(b.joint_name);
            if (!j) throw std::runtime_error("dart: no joint " + b.joint_name);
            index_.push_back(b.nv() ? static_cast<int>(j->getIndexInSkeleton(0)) : -1);
        }
        for (const State& s : work.states) {
            Input in{Eigen::VectorXd(n), Eigen::VectorXd(n), Eigen::VectorXd(n), Eigen::VectorXd(n), {}, {}};
            for (size_t i = 0; i < index_.size(); ++i) {
                const Body& b = r.model.bodies[i];
                const int d = index_[i];
                if (d < 0) continue;
                for (int c = 0; c < b.nv(); ++c)
                    in.qd[d + c] = s.qd[b.v_index + c], in.qdd[d + c] = s.qdd[b.v_index + c], in.tau[d + c] = s.tau[b.v_index + c];
                if (b.type != JointType::Floating) {
                    in.q[d] = s.q[b.q_index];
                    continue;
                }
                const double* q = &s.q[b.q_index];
                Eigen::Isometry3d T = Eigen::Isometry3d::Identity();
                T.linear() = Eigen::Quaterniond(q[6], q[3], q[4], q[5]).toRotationMatrix();
                T.translation() = Eigen::Vector3d(q[0], q[1], q[2]);
                in.q.segment<6>(d) = dart::dynamics::FreeJoint::convertToPositions(T);
            }
            for (const SVec<double>& f : s.fext) {
                in.force.emplace_back(f.l[0], f.l[1], f.l[2]);
                in.torque.emplace_back(f.w[0], f.w[1], f.w[2]);
            }
            inputs_.push_back(std::move(in));
        }
    }
    std::string name() const override { return "dart"; }
    void id(int k) override {
        const Input& in = inputs_[k];
        set_state(in);
        skel_->setAccelerations(in.qdd);
        skel_->computeInverseDynamics(true, false, false);
        out_ = skel_->getForces();
    }
    void fd(int k) override {
        const Input& in = inputs_[k];
        set_state(in);
        skel_->setForces(in.tau);
        skel_->computeForwardDynamics();
        out_ = skel_->getAccelerations();
    }
    void id_result(double* tau) const override { result(tau); }
    void fd_result(double* qdd) const override { result(qdd); }

private:
    struct Input {
        Eigen::VectorXd q, qd, qdd, tau;
        std::vector<Eigen::Vector3d> force, torque;  // per nelu body, body frame
    };
    void set_state(const Input& in) {
        skel_->setPositions(in.q);
        skel_->setVelocities(in.qd);
        for (size_t i = 0; i < nodes_.size(); ++i) {
            nodes_[i]->setExtForce(in.force[i], Eigen::Vector3d::Zero(), true, true);
            nodes_[i]->setExtTorque(in.torque[i], true);
        }
    }
    void result(double* x) const {
        for (size_t i = 0; i < index_.size(); ++i)
            for (int c = 0; index_[i] >= 0 && c < model_.bodies[i].nv(); ++c) x[model_.bodies[i].v_index + c] = out_[index_[i] + c];
    }
    const Model& model_;
    dart::dynamics::SkeletonPtr skel_;
    std::vector<dart::dynamics::BodyNode*> nodes_;  // per nelu body
    std::vector<int> index_;                       // per nelu body: first DART dof, -1 without
    std::vector<Input> inputs_;
    Eigen::VectorXd out_;
};

}  // namespace

std::vector<EnginePtr> make_dart(const Robot& robot, const Workload& work, std::vector<Unavailable>&) {
    using dart::utils::DartLoader;
    DartLoader::Options options;
    // A link without <inertial> is massless, as in nelu (DART's default would be 1 kg).
    options.mDefaultInertia = dart::dynamics::Inertia(0.0, Eigen::Vector3d::Zero(), Eigen::Matrix3d::Zero());
    options.mDefaultRootJointType = robot.floating ? DartLoader::RootJointType::FLOATING : DartLoader::RootJointType::FIXED;
    DartLoader loader(options);
    dart::dynamics::SkeletonPtr skel = loader.parseSkeletonString(robot.urdf_text, dart::common::Uri("file://" + robot.urdf_path));
    if (!skel) throw std::runtime_error("dart: cannot load " + robot.urdf_path);
    std::vector<EnginePtr> engines;
    engines.push_back(std::make_unique<DartEngine>(robot, work, skel));
    return engines;
}

}  // namespace nelu::bench
