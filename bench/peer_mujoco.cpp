// peer_mujoco.cpp: MuJoCo (Debian libmujoco-dev 2.2.2) on the same URDF.
//
// The model: the robot's URDF text with a <mujoco><compiler .../></mujoco> element added
// (discardvisual, balanceinertia="false" so that no inertia is altered, inertiafromgeom="false",
// fusestatic="true": fixed joints merged into their parent, as nelu merges them). A floating base
// is a URDF floating joint "root_joint" from a "world" link to the root link (MuJoCo's free joint).
// After loading: gravity from nelu's model, no damping, armature or friction loss, no joint limits,
// the constraint solver, contacts and passive forces disabled, and every body inertia replaced by
// an exact principal-axis decomposition of nelu's (see replace_inertias: MuJoCo's own is accurate
// to ~1e-8 only; the deviation it had is written into the benchmark context, and the check-only
// engines mujoco_rne_as_imported and mujoco_forward_as_imported report how far MuJoCo's results on
// its own inertias are from the reference).
//
// What is timed (state copied into mjData first in each call):
//   ID  mujoco_rne      mj_kinematics, mj_comPos, mj_comVel, mj_rne(flg_acc = 1):
//                       tau = M(q) qdd + c(q, qd) (bias, gravity included). MuJoCo's RNE takes no
//                       external wrenches, so this call computes ID at f^x = 0.
//   FD  mujoco_forward  mj_forward with qfrc_applied = tau and xfrc_applied = f^x (world frame, at
//                       the centre of mass, converted once per state): all of MuJoCo's pipeline
//                       (kinematics, CRB, sparse factorization of M, bias, passive, actuation,
//                       constraint stage disabled).
//   FD  mujoco_crb      mj_kinematics, mj_comPos, mj_crb, mj_factorM, mj_comVel, mj_rne(flg_acc = 0),
//                       qfrc = tau - bias, mj_solveM: the minimal FD sequence, at f^x = 0.
//
// Free joint conventions (checked numerically by the harness): qpos = [x y z qw qx qy qz],
// qvel = [v_world; w_body], qacc = d/dt qvel, generalized force [f_world; n_body]; nelu's floating
// base has the body-frame twist [w; v_body], so v_world = R v_body and
// a_world = R (vdot_body + w x v_body).
#include <benchmark/benchmark.h>
#include <mujoco/mujoco.h>
#include <tinyxml2.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "engine.hpp"

namespace nelu::bench {
namespace {

/// The URDF text MuJoCo loads: nelu's URDF plus compiler options and, for a floating base, the
/// 6-DoF root joint.
std::string mujoco_urdf(const Robot& r) {
    tinyxml2::XMLDocument doc;
    if (doc.Parse(r.urdf_text.c_str()) != tinyxml2::XML_SUCCESS) throw std::runtime_error("mujoco: cannot parse " + r.urdf_path);
    tinyxml2::XMLElement* robot = doc.FirstChildElement("robot");
    tinyxml2::XMLElement* mj = doc.NewElement("mujoco");
    tinyxml2::XMLElement* compiler = doc.NewElement("compiler");
    compiler->SetAttribute("discardvisual", "true");
    compiler->SetAttribute("balanceinertia", "false");
    compiler->SetAttribute("inertiafromgeom", "false");
    compiler->SetAttribute("fusestatic", "true");
    compiler->SetAttribute("angle", "radian");
    mj->InsertEndChild(compiler);
    robot->InsertFirstChild(mj);
    if (r.floating) {
        tinyxml2::XMLElement* world = doc.NewElement("link");
        world->SetAttribute("name", "world");
        robot->InsertEndChild(world);
        tinyxml2::XMLElement* joint = doc.NewElement("joint");
        joint->SetAttribute("name", "root_joint");
        joint->SetAttribute("type", "floating");
        joint->InsertNewChildElement("parent")->SetAttribute("link", "world");
        joint->InsertNewChildElement("child")->SetAttribute("link", r.model.bodies[0].name.c_str());
        robot->InsertEndChild(joint);
    }
    tinyxml2::XMLPrinter printer;
    doc.Print(&printer);
    return printer.CStr();
}

/// Centre of mass and rotational inertia about it of a nelu body inertia, row major.
void com_inertia(const Inertia<double>& I, Eigen::Vector3d& c, Eigen::Matrix3d& Ic) {
    for (int a = 0; a < 3; ++a) c[a] = I.h[a] / I.m;
    Mat3<double> cx = skew(Vec3<double>{{c[0], c[1], c[2]}}), cxcx = cx * cx;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) Ic(a, b) = I.Ibar(a, b) + I.m * cxcx(a, b);
}

/// MuJoCo keeps each body inertia as principal moments and axes, found by an iterative
/// eigen-decomposition whose absolute tolerance (1e-12 in 2.2.2) moves full inertia tensors by
/// up to ~1e-8 relative, and forward dynamics by up to ~1e-7. This replaces them with the same
/// decomposition of nelu's body inertias computed to rounding (Eigen), after checking that what
/// MuJoCo imported is that inertia to 1e-6; returns the largest imported deviation (relative to
/// the body's largest moment).
double replace_inertias(const Robot& r, mjModel* m) {
    double worst = 0;
    for (const Body& b : r.model.bodies) {
        const int mb = mj_name2id(m, mjOBJ_BODY, b.name.c_str());
        if (mb < 0) throw std::runtime_error("mujoco: no body " + b.name);
        Eigen::Vector3d c;
        Eigen::Matrix3d Ic;
        com_inertia(b.I, c, Ic);
        double R[9];  // MuJoCo's imported inertia, for the check
        mju_quat2Mat(R, m->body_iquat + 4 * mb);
        Eigen::Matrix3d Rm = Eigen::Map<Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(R);
        Eigen::Matrix3d Imj = Rm * Eigen::Vector3d(m->body_inertia + 3 * mb).asDiagonal() * Rm.transpose();
        const double scale = Ic.cwiseAbs().maxCoeff();
        double dev = (Imj - Ic).cwiseAbs().maxCoeff() / scale;
        dev = std::max(dev, std::abs(m->body_mass[mb] - b.I.m) / b.I.m);
        for (int a = 0; a < 3; ++a) dev = std::max(dev, std::abs(m->body_ipos[3 * mb + a] - c[a]) / std::max(1.0, c.norm()));
        if (!(dev < 1e-6)) throw std::runtime_error("mujoco: the inertia of " + b.name + " differs from nelu's by " + std::to_string(dev));
        worst = std::max(worst, dev);
        // a diagonal tensor is its own principal decomposition (exact, and the body's own axes)
        Eigen::Matrix3d V = Eigen::Matrix3d::Identity();
        Eigen::Vector3d moments = Ic.diagonal();
        if (Ic(0, 1) != 0 || Ic(0, 2) != 0 || Ic(1, 2) != 0) {
            Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> eig(Ic);
            V = eig.eigenvectors(), moments = eig.eigenvalues();
            if (V.determinant() < 0) V.col(2) = -V.col(2);
        }
        Eigen::Quaterniond quat(V);
        m->body_mass[mb] = b.I.m;
        for (int a = 0; a < 3; ++a) m->body_ipos[3 * mb + a] = c[a], m->body_inertia[3 * mb + a] = moments[a];
        m->body_iquat[4 * mb] = quat.w(), m->body_iquat[4 * mb + 1] = quat.x();
        m->body_iquat[4 * mb + 2] = quat.y(), m->body_iquat[4 * mb + 3] = quat.z();
        // MuJoCo's kinematics skip the inertial frame of a body whose inertial frame its compiler found
        // to be the body frame (body_sameframe: ipos 0, iquat identity), e.g. the ur5's links of
        // ../shared/robots: keep the flag true to what is written here
        m->body_sameframe[mb] = c.isZero(0) && V.isIdentity(0);
    }
    return worst;
}

/// MuJoCo's model compiler refuses the URDF (e.g. an inertia that violates the triangle inequality,
/// which nelu accepts): MuJoCo is then unavailable on this robot, not a failed check.
struct LoadError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

mjModel* load_model(const Robot& r, bool exact_inertias) {
    const std::string xml = mujoco_urdf(r);
    auto vfs = std::make_unique<mjVFS>();
    mj_defaultVFS(vfs.get());
    if (mj_makeEmptyFileVFS(vfs.get(), "robot.urdf", static_cast<int>(xml.size())) != 0)
        throw std::runtime_error("mujoco: cannot make the virtual file");
    std::memcpy(vfs->filedata[mj_findFileVFS(vfs.get(), "robot.urdf")], xml.data(), xml.size());
    char error[1000] = "";
    mjModel* m = mj_loadXML("robot.urdf", vfs.get(), error, sizeof error);
    mj_deleteVFS(vfs.get());
    if (!m) throw LoadError("MuJoCo's model compiler refuses the URDF: " + std::string(error));
    for (int i = 0; i < 3; ++i) m->opt.gravity[i] = r.model.gravity.l[i];
    for (int i = 0; i < m->nv; ++i) m->dof_damping[i] = m->dof_armature[i] = m->dof_frictionloss[i] = 0;
    for (int j = 0; j < m->njnt; ++j) m->jnt_limited[j] = 0;
    m->opt.disableflags |= mjDSBL_CONSTRAINT | mjDSBL_CONTACT | mjDSBL_PASSIVE;
    if (!exact_inertias) return m;
    try {
        char text[96];
        std::snprintf(text, sizeof text, "%.3g", replace_inertias(r, m));
        benchmark::AddCustomContext("mujoco_inertia_import/" + r.name, text);
        mjData* d = mj_makeData(m);
        mj_setConst(m, d);  // constants derived from the inertias
        mj_deleteData(d);
    } catch (...) {
        mj_deleteModel(m);
        throw;
    }
    return m;
}

using Mat3d = Mat3<double>;
using Vec3d = Vec3<double>;

/// One MuJoCo model, the joint map and every state in MuJoCo's coordinates; shared by the engines.
struct Shared {
    mjModel* m = nullptr;
    struct Joint {
        int body, qadr, dadr;  // nelu body, MuJoCo qpos and dof addresses
        bool floating;
    };
    std::vector<Joint> joints;
    std::vector<std::vector<double>> qpos, qvel, qacc, qfrc, xfrc;
    std::vector<Mat3d> R;            // floating base rotation (body -> world) per state
    std::vector<Vec3d> w, v;         // floating base body-frame twist per state
    const Model* model = nullptr;
    ~Shared() { mj_deleteModel(m); }
};

Vec3d v3(const double* p) { return {{p[0], p[1], p[2]}}; }
void put(double* p, const Vec3d& x) { p[0] = x[0], p[1] = x[1], p[2] = x[2]; }

std::shared_ptr<Shared> make_shared_model(const Robot& r, const Workload& work, bool exact_inertias) {
    auto sh = std::make_shared<Shared>();
    sh->m = load_model(r, exact_inertias);
    sh->model = &r.model;
    const mjModel* m = sh->m;
    const Model& nm = r.model;
    // --- the same model: degrees of freedom, joints and total mass
    if (m->nv != nm.nv || m->nq != nm.nq)
        throw std::runtime_error("mujoco: nq/nv " + std::to_string(m->nq) + "/" + std::to_string(m->nv) + ", nelu " +
                                 std::to_string(nm.nq) + "/" + std::to_string(nm.nv));
    double mass_mj = 0, mass_nelu = 0;
    for (int b = 0; b < m->nbody; ++b) mass_mj += m->body_mass[b];
    for (const Body& b : nm.bodies) mass_nelu += b.I.m;
    if (std::abs(mass_mj - mass_nelu) > 1e-12 * mass_nelu)
        throw std::runtime_error("mujoco: total mass " + std::to_string(mass_mj) + ", nelu " + std::to_string(mass_nelu));
    for (int i = 0; i < nm.num_bodies(); ++i) {
        const Body& b = nm.bodies[i];
        if (b.nv() == 0) continue;
        int jid = mj_name2id(m, mjOBJ_JOINT, b.joint_name.c_str());
        if (jid < 0) throw std::runtime_error("mujoco: no joint " + b.joint_name);
        sh->joints.push_back({i, m->jnt_qposadr[jid], m->jnt_dofadr[jid], b.type == JointType::Floating});
    }
    // --- every state in MuJoCo's coordinates
    mjData* d = mj_makeData(m);
    for (const State& s : work.states) {
        std::vector<double> qpos(m->nq), qvel(m->nv), qacc(m->nv), qfrc(m->nv), xfrc(6 * m->nbody, 0.0);
        Mat3d R = identity3<double>();
        Vec3d w = zero3<double>(), v = zero3<double>();
        for (const auto& j : sh->joints) {
            const Body& b = nm.bodies[j.body];
            const double *q = &s.q[b.q_index], *qd = &s.qd[b.v_index], *qdd = &s.qdd[b.v_index], *tau = &s.tau[b.v_index];
            if (!j.floating) {
                qpos[j.qadr] = q[0], qvel[j.dadr] = qd[0], qacc[j.dadr] = qdd[0], qfrc[j.dadr] = tau[0];
                continue;
            }
            R = quat_to_rotation(q[3], q[4], q[5], q[6]);
            w = v3(qd), v = v3(qd + 3);
            put(&qpos[j.qadr], v3(q));
            qpos[j.qadr + 3] = q[6], qpos[j.qadr + 4] = q[3], qpos[j.qadr + 5] = q[4], qpos[j.qadr + 6] = q[5];
            put(&qvel[j.dadr], R * v), put(&qvel[j.dadr + 3], w);
            put(&qacc[j.dadr], R * (v3(qdd + 3) + cross(w, v))), put(&qacc[j.dadr + 3], v3(qdd));
            put(&qfrc[j.dadr], R * v3(tau + 3)), put(&qfrc[j.dadr + 3], v3(tau));
        }
        // f^x of body i (body frame, body origin) -> world force and torque about the centre of mass
        mju_copy(d->qpos, qpos.data(), m->nq);
        mj_kinematics(m, d);
        for (int i = 0; i < nm.num_bodies(); ++i) {
            int mb = mj_name2id(m, mjOBJ_BODY, nm.bodies[i].name.c_str());
            if (mb < 0) throw std::runtime_error("mujoco: no body " + nm.bodies[i].name);
            Mat3d Rb;
            for (int a = 0; a < 3; ++a)
                for (int c = 0; c < 3; ++c) Rb(a, c) = d->xmat[9 * mb + 3 * a + c];
            Vec3d f = Rb * s.fext[i].l, n = Rb * s.fext[i].w;
            Vec3d arm = v3(d->xpos + 3 * mb) - v3(d->xipos + 3 * mb);
            put(&xfrc[6 * mb], f), put(&xfrc[6 * mb + 3], n + cross(arm, f));
        }
        sh->qpos.push_back(qpos), sh->qvel.push_back(qvel), sh->qacc.push_back(qacc);
        sh->qfrc.push_back(qfrc), sh->xfrc.push_back(xfrc);
        sh->R.push_back(R), sh->w.push_back(w), sh->v.push_back(v);
    }
    mj_deleteData(d);
    return sh;
}

/// MuJoCo's generalized forces or accelerations of state k in nelu's slot order.
void to_nelu(const Shared& sh, int k, const double* x, bool acceleration, double* out) {
    for (const auto& j : sh.joints) {
        const Body& b = sh.model->bodies[j.body];
        double* o = out + b.v_index;
        if (!j.floating) {
            o[0] = x[j.dadr];
            continue;
        }
        const Mat3d& R = sh.R[k];
        Vec3d lin = mul_transpose(R, v3(x + j.dadr));  // R^T (f_world or a_world)
        if (acceleration) lin = lin - cross(sh.w[k], sh.v[k]);
        put(o, v3(x + j.dadr + 3)), put(o + 3, lin);
    }
}

class MujocoEngine : public Engine {
public:
    /// `suffix`: "" for the timed engines (exact inertias); "_as_imported" for the check-only ones
    /// on MuJoCo's own inertias.
    MujocoEngine(std::shared_ptr<Shared> sh, std::string suffix)
        : sh_(std::move(sh)), m_(sh_->m), d_(mj_makeData(m_)), out_(m_->nv), suffix_(std::move(suffix)) {}
    ~MujocoEngine() override { mj_deleteData(d_); }
    bool check_only() const override { return !suffix_.empty(); }
    void id_result(double* tau) const override { to_nelu(*sh_, k_, out_.data(), false, tau); }
    void fd_result(double* qdd) const override { to_nelu(*sh_, k_, out_.data(), true, qdd); }

protected:
    void load_state(int k) {
        k_ = k;
        mju_copy(d_->qpos, sh_->qpos[k].data(), m_->nq);
        mju_copy(d_->qvel, sh_->qvel[k].data(), m_->nv);
    }
    std::shared_ptr<Shared> sh_;
    const mjModel* m_;
    mjData* d_;
    std::vector<double> out_;
    std::string suffix_;
    int k_ = 0;
};

class MujocoRne final : public MujocoEngine {
public:
    using MujocoEngine::MujocoEngine;
    std::string name() const override { return "mujoco_rne" + suffix_; }
    bool takes_fext() const override { return false; }
    bool has_fd() const override { return false; }
    void id(int k) override {
        load_state(k);
        mju_copy(d_->qacc, sh_->qacc[k].data(), m_->nv);
        mj_kinematics(m_, d_);
        mj_comPos(m_, d_);
        mj_comVel(m_, d_);
        mj_rne(m_, d_, 1, out_.data());
    }
    void fd(int) override {}
};

class MujocoForward final : public MujocoEngine {
public:
    using MujocoEngine::MujocoEngine;
    std::string name() const override { return "mujoco_forward" + suffix_; }
    bool has_id() const override { return false; }
    void id(int) override {}
    void fd(int k) override {
        load_state(k);
        mju_copy(d_->qfrc_applied, sh_->qfrc[k].data(), m_->nv);
        mju_copy(d_->xfrc_applied, sh_->xfrc[k].data(), 6 * m_->nbody);
        mj_forward(m_, d_);
        mju_copy(out_.data(), d_->qacc, m_->nv);
    }
};

class MujocoCrb final : public MujocoEngine {
public:
    using MujocoEngine::MujocoEngine;
    std::string name() const override { return "mujoco_crb" + suffix_; }
    bool takes_fext() const override { return false; }
    bool has_id() const override { return false; }
    void id(int) override {}
    void fd(int k) override {
        load_state(k);
        mj_kinematics(m_, d_);
        mj_comPos(m_, d_);
        mj_crb(m_, d_);
        mj_factorM(m_, d_);
        mj_comVel(m_, d_);
        mj_rne(m_, d_, 0, d_->qfrc_bias);
        const double* tau = sh_->qfrc[k].data();
        for (int i = 0; i < m_->nv; ++i) d_->qfrc_smooth[i] = tau[i] - d_->qfrc_bias[i];
        mj_solveM(m_, d_, out_.data(), d_->qfrc_smooth, 1);
    }
};

}  // namespace

std::vector<EnginePtr> make_mujoco(const Robot& robot, const Workload& work, std::vector<Unavailable>& unavailable) {
    std::shared_ptr<Shared> sh;
    try {
        sh = make_shared_model(robot, work, true);
    } catch (const LoadError& e) {
        unavailable.push_back({"mujoco", e.what()});
        return {};
    }
    std::vector<EnginePtr> engines;
    engines.push_back(std::make_unique<MujocoRne>(sh, ""));
    engines.push_back(std::make_unique<MujocoForward>(sh, ""));
    engines.push_back(std::make_unique<MujocoCrb>(sh, ""));
    auto imported = make_shared_model(robot, work, false);  // how far MuJoCo's own inertias are off
    engines.push_back(std::make_unique<MujocoRne>(imported, "_as_imported"));
    engines.push_back(std::make_unique<MujocoForward>(imported, "_as_imported"));
    return engines;
}

}  // namespace nelu::bench
