// peer_kdl.cpp: Orocos KDL (Debian liborocos-kdl-dev 1.5.1, kdl_parser 1.14) on the same URDF.
//
// kdl_parser turns every URDF joint into a segment (fixed joints into segments without a degree of
// freedom) whose frame is the child link's frame, so external wrenches are given per segment in
// the link frame at the link origin, as nelu's f^x (KDL's order is [f; n]). Gravity from nelu's
// model. KDL has no floating-base joint, so the floating-base robot is not run.
//
// What is timed (joint arrays and wrenches of the state prepared beforehand):
//   ID  kdl_rne  chains: ChainIdSolver_RNE::CartToJnt; trees: TreeIdSolver_RNE::CartToJnt.
//   FD  kdl_rne  chains only: ChainFdSolver_RNE::CartToJnt (KDL's joint-space inertia matrix by
//                ChainDynParam, bias by RNE, then a dense LDL^T solve); KDL has no tree FD.
#include <kdl/chainfdsolver_recursive_newton_euler.hpp>
#include <kdl/chainidsolver_recursive_newton_euler.hpp>
#include <kdl/treeidsolver_recursive_newton_euler.hpp>
#include <kdl_parser/kdl_parser.hpp>

#include <cmath>
#include <map>
#include <stdexcept>

#include "engine.hpp"

namespace nelu::bench {
namespace {

KDL::Wrench wrench(const SVec<double>& f) {
    return KDL::Wrench(KDL::Vector(f.l[0], f.l[1], f.l[2]), KDL::Vector(f.w[0], f.w[1], f.w[2]));
}

/// The tree's segments in a chain from the root, or empty when some segment has two children.
std::vector<std::string> chain_tip(const KDL::Tree& tree) {
    auto it = tree.getRootSegment();
    std::vector<std::string> path;
    for (;;) {
        const auto& children = GetTreeElementChildren(it->second);
        if (children.empty()) return path;
        if (children.size() > 1) return {};
        it = children[0];
        path.push_back(it->first);
    }
}

class KdlEngine final : public Engine {
public:
    KdlEngine(const Robot& r, const Workload& work, const KDL::Tree& tree_in) : model_(r.model), tree_(tree_in) {
        const KDL::Tree& tree = tree_;  // KDL's solvers keep references to their chain or tree
        const KDL::Vector g(r.model.gravity.l[0], r.model.gravity.l[1], r.model.gravity.l[2]);
        std::map<std::string, int> qnr;  // joint name -> KDL joint index
        std::vector<std::string> segments;  // segment names, in the chain's order when a chain
        std::vector<std::string> path = chain_tip(tree);
        if (!path.empty()) {
            if (!tree.getChain(tree.getRootSegment()->first, path.back(), chain_))
                throw std::runtime_error("kdl: no chain to " + path.back());
            int nj = 0;
            for (const KDL::Segment& s : chain_.segments) {
                segments.push_back(s.getName());
                if (s.getJoint().getType() != KDL::Joint::None) qnr[s.getJoint().getName()] = nj++;
            }
            chain_id_ = std::make_unique<KDL::ChainIdSolver_RNE>(chain_, g);
            chain_fd_ = std::make_unique<KDL::ChainFdSolver_RNE>(chain_, g);
        } else {
            for (const auto& [name, element] : tree.getSegments()) {
                const KDL::Segment& s = GetTreeElementSegment(element);
                if (s.getJoint().getType() != KDL::Joint::None) qnr[s.getJoint().getName()] = GetTreeElementQNr(element);
            }
            tree_id_ = std::make_unique<KDL::TreeIdSolver_RNE>(tree, g);
        }
        const unsigned nj = path.empty() ? tree.getNrOfJoints() : chain_.getNrOfJoints();
        if (nj != static_cast<unsigned>(r.model.nv))
            throw std::runtime_error("kdl: " + std::to_string(nj) + " joints, nelu " + std::to_string(r.model.nv));
        for (const Body& b : r.model.bodies) {
            if (b.nv() == 0) {
                index_.push_back(-1);
                continue;
            }
            auto it = qnr.find(b.joint_name);
            if (it == qnr.end()) throw std::runtime_error("kdl: no joint " + b.joint_name);
            index_.push_back(it->second);
        }
        for (const State& s : work.states) {
            Input in{KDL::JntArray(nj), KDL::JntArray(nj), KDL::JntArray(nj), KDL::JntArray(nj), {}, {}};
            for (size_t i = 0; i < index_.size(); ++i) {
                const Body& b = r.model.bodies[i];
                if (index_[i] < 0) continue;
                in.q(index_[i]) = s.q[b.q_index], in.qd(index_[i]) = s.qd[b.v_index];
                in.qdd(index_[i]) = s.qdd[b.v_index], in.tau(index_[i]) = s.tau[b.v_index];
            }
            std::map<std::string, SVec<double>> fext;  // by link name
            for (int i = 0; i < r.model.num_bodies(); ++i) fext[r.model.bodies[i].name] = s.fext[i];
            for (const std::string& seg : segments) {
                auto it = fext.find(seg);
                in.wrenches.push_back(it == fext.end() ? KDL::Wrench::Zero() : wrench(it->second));
            }
            if (path.empty())
                for (const auto& [name, element] : tree.getSegments())
                    in.wrench_map[name] = fext.count(name) ? wrench(fext[name]) : KDL::Wrench::Zero();
            inputs_.push_back(std::move(in));
        }
        out_ = KDL::JntArray(nj);
    }
    std::string name() const override { return "kdl_rne"; }
    bool has_fd() const override { return chain_fd_ != nullptr; }
    void id(int k) override {
        const Input& in = inputs_[k];
        status_ = chain_id_ ? chain_id_->CartToJnt(in.q, in.qd, in.qdd, in.wrenches, out_)
                            : tree_id_->CartToJnt(in.q, in.qd, in.qdd, in.wrench_map, out_);
    }
    void fd(int k) override {
        const Input& in = inputs_[k];
        status_ = chain_fd_->CartToJnt(in.q, in.qd, in.tau, in.wrenches, out_);
    }
    void id_result(double* tau) const override { result(tau); }
    void fd_result(double* qdd) const override { result(qdd); }

private:
    struct Input {
        KDL::JntArray q, qd, qdd, tau;
        KDL::Wrenches wrenches;  // chains: one per segment
        KDL::WrenchMap wrench_map;  // trees: by segment name, every segment (KDL looks each one up)
    };
    void result(double* x) const {
        for (size_t i = 0; i < index_.size(); ++i)
            if (index_[i] >= 0) x[model_.bodies[i].v_index] = status_ >= 0 ? out_(index_[i]) : NAN;
    }
    const Model& model_;
    KDL::Tree tree_;
    KDL::Chain chain_;
    std::unique_ptr<KDL::ChainIdSolver_RNE> chain_id_;
    std::unique_ptr<KDL::ChainFdSolver_RNE> chain_fd_;
    std::unique_ptr<KDL::TreeIdSolver_RNE> tree_id_;
    std::vector<int> index_;  // body -> KDL joint index
    std::vector<Input> inputs_;
    KDL::JntArray out_;
    int status_ = 0;
};

}  // namespace

std::vector<EnginePtr> make_kdl(const Robot& robot, const Workload& work, std::vector<Unavailable>& unavailable) {
    std::vector<EnginePtr> engines;
    if (robot.floating) {
        unavailable.push_back({"kdl_rne", "KDL has no floating-base joint"});
        return engines;
    }
    KDL::Tree tree;
    if (!kdl_parser::treeFromString(robot.urdf_text, tree)) throw std::runtime_error("kdl: cannot parse " + robot.urdf_path);
    engines.push_back(std::make_unique<KdlEngine>(robot, work, tree));
    if (!engines.back()->has_fd()) unavailable.push_back({"kdl_rne", "FD: KDL has no forward dynamics for trees"});
    return engines;
}

}  // namespace nelu::bench
