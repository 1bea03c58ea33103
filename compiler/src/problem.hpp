// problem.hpp: the `problem` pass. Which dynamic quantities are known and which are sought.
//
// Presets: `id` (known qdd and f^x, sought tau), `fd` (known tau and f^x, sought qdd); `hybrid`
// and YAML specs choose per joint whether qdd or tau is known, and per link whether the external
// wrench is an input or zero. The spec format is documented in docs/problem-spec.md.
#pragma once

#include <string>
#include <vector>

#include "nelu/contact.hpp"
#include "nelu/model.hpp"

namespace nelu {

/// What is known of one joint: its acceleration (torque sought), its torque (acceleration
/// sought), neither (both sought) or both (both inputs, e.g. an unactuated floating base whose
/// acceleration is measured).
enum class JointKnown { Qdd, Tau, None, Both };

/// How an external wrench f^x_i enters: an input, exactly zero, or an unknown (a contact wrench,
/// possibly partly measured by a sensor).
enum class WrenchMode { Input, Zero, Unknown };

/// A measurement or an exact kinematic condition (section VI of Nori's paper).
enum class SensorType {
    ForceTorque,        ///< six-axis F/T: the wrench transmitted by a joint (kept as a body boundary)
    ContactWrench,      ///< an external wrench on a link measured in some components of a frame
                        ///< (load cells: f_z, n_x, n_y), optionally with exact zero components
    Accelerometer,      ///< proper linear acceleration of a point, in the sensor frame
    JointTorque,        ///< joint torque sensor
    JointAcceleration,  ///< joint acceleration measurement
    LinkAcceleration,   ///< a link's spatial acceleration is known exactly (rigid contact: zero)
};
const char* sensor_type_name(SensorType t);

struct Sensor {
    std::string name;
    SensorType type = SensorType::ForceTorque;
    std::string where;       ///< "FILE:LINE: " of its definition, for messages
    std::string link;        ///< link it is attached to (F/T: the joint's child link)
    std::string joint;       ///< F/T sensors, joint sensors
    int body = -1;           ///< body of `link` (F/T: the joint's child body), or of the joint
    /// Sensor frame: motion transform from the body's frame to the sensor frame (F/T sensors in the
    /// child frame: identity; in a sensor frame: its pose in the child link; accelerometers, contact
    /// sensors: the sensor's pose). F/T sensors in the parent frame: from the joint's parent body's
    /// frame to its parent link's frame (identity unless that link was merged; for the root joint
    /// of a fixed base, from the world).
    Xform<double> X_sensor_body = identity_xform<double>();
    /// F/T with <frame>parent</frame>: the wrench X_up^T f_i, in the parent link's frame (at any
    /// joint: for a moving one the frame turns with q relative to the child).
    bool frame_is_parent = false;
    double sign = 1;               ///< F/T: +1 parent_to_child (the wrench on the child), -1 child_to_parent
    std::vector<int> components;   ///< measured components ([n f] or [x y z] order)
    std::vector<int> zero_components;  ///< ContactWrench: components known to be exactly zero
    std::vector<double> variance;  ///< per measured component (weighted least squares)
    SVec<double> value{{{0, 0, 0}}, {{0, 0, 0}}};  ///< LinkAcceleration: the known value
    std::string type_word;  ///< the spec's type (load_cell and contact_wrench are one SensorType)
    std::string frame;      ///< what its readings are expressed in, in words ("frame of link l_foot", ...); empty for a joint's
    std::string reads;      ///< what it reads, in words ("the wrench wrist_2_link exerts on wrist_3_link through joint wrist_3_joint", ...)
};

/// The unit of component `comp` of a sensor's reading (SI): "N m" and "N" for a wrench's moment and
/// force, "m/s^2" for an accelerometer, and a joint's own by its type.
const char* measurement_unit(const Sensor& s, const Model& m, int comp);

/// A point on a link: an operational point (osim) or a contact point (iwim). Its frame has the
/// link's axes and its origin at `point` (link frame).
struct PointSpec {
    std::string link, where;
    int body = -1;
    Xform<double> X_point_body = identity_xform<double>();  ///< body frame -> point frame
    int dof = 6;  ///< osim: 6 ([angular; linear]) or 3 (linear); iwim contacts: 3 (a force)
    double xyz[3] = {0, 0, 0};  ///< `point` as the spec gives it (link frame)
};

/// Outputs a spec may ask for (each a set of slots of the generated function).
struct Outputs {
    bool joint_torques = true;        ///< every sought joint torque
    bool joint_accelerations = true;  ///< every sought joint acceleration
    bool contact_wrenches = true;     ///< every unknown external wrench (link frame, link origin)
    bool link_accelerations = false;  ///< every body's spatial acceleration (link frame)
    bool joint_wrenches = false;      ///< every body's joint wrench f_i (link frame, on the child)
    bool contact_forces = true;       ///< every contact's force (impulse: its impulse), constraint frame
    bool joint_velocities = true;     ///< impulse: the post-impact velocities v+
    std::string where;                ///< the spec's `outputs:` ("FILE:LINE: "); empty where it has none
};

/// An external wrench on a link that was merged into a body through fixed joints (a foot's sole, a
/// tool frame): expressed in that link's frame at its origin. The bodies' own links are
/// Problem::wrench.
struct LinkWrench {
    std::string link;
    int body = -1;                                          ///< the body it was merged into
    Xform<double> X_link_body = identity_xform<double>();   ///< body frame -> link frame
    WrenchMode mode = WrenchMode::Input;
};

/// A rigid contact with the world (spec key `contacts:`; docs/contacts.md): the runtime's
/// `nelu::Contact` (Pinocchio's RigidConstraintModel: type, constraint frame, placement in its body,
/// Baumgarte gains) and where it was written.
struct ContactSpec {
    Contact contact;
    std::string link;   ///< the link it was given on (may have been merged into contact.body)
    std::string where;  ///< "FILE:LINE: "
    /// Whether the solver reads a reference placement (some Kp is not zero): a point's world
    /// position x y z, input slots of quantity contact_reference.
    bool reads_reference() const {
        for (int k = 0; k < contact.dim(); ++k)
            if (contact.kp[k] != 0) return true;
        return false;
    }
};

struct Problem {
    std::string kind;  ///< "id", "fd", "hybrid", "osim", "iwim", "impulse"
    std::string spec_file;  ///< YAML spec, when the problem came from one
    bool floating_base = false;
    SVec<double> gravity{{{0, 0, 0}}, {{0, 0, -9.81}}};
    std::vector<JointKnown> joint;   ///< per body (ignored for bodies without DoF)
    std::vector<WrenchMode> wrench;  ///< per body (its own link)
    std::vector<LinkWrench> link_wrenches;  ///< merged links with an input or unknown wrench, by body then name
    std::vector<Sensor> sensors;
    Outputs outputs;
    std::vector<std::string> notes;  ///< things the user should know (gyroscopes ignored, ...)
    /// Accept a problem that is well posed at random configurations but singular at special ones
    /// (every joint at 0, pi/2, pi: e.g. a humanoid's feet parallel); the solver then returns
    /// NELU_STATUS_SMALL_PIVOT near them. Spec key `allow_singular_configurations`.
    bool allow_special_singularities = false;
    /// Contacts without the key: allow_special_singularities is on by default, and this note says so
    /// where it mattered (the compiler found the contact set singular at a special configuration).
    std::string default_allow_note;
    /// osim: operational points; iwim: contact points (inputs: 3-D forces, link axes).
    std::vector<PointSpec> points;
    /// iwim: the actuated joints' velocity slots (inputs: unit torques), in the spec's order (`all`: slot order).
    std::vector<int> actuated;
    /// osim: also output Lambda, the inverse of Lambda^-1, by a static LDL^T (spec key `lambda`).
    bool lambda = false;
    /// Rigid contacts (problems fd and impulse): each adds its force (impulse) components as
    /// unknowns and its constraint rows (system.hpp).
    std::vector<ContactSpec> contacts;
    /// Pinocchio's damping mu of the contact KKT system (J qdd + gamma + k + mu lambda = 0: one
    /// damped solve, its proximal iterations started from zero and stopped after the first).
    double damping = 0;
    /// impulse: the restitution r in [0, 1] (J v+ = -r J v-).
    double restitution = 0;
    bool impulse() const { return kind == "impulse"; }
    bool response_kind() const { return kind == "osim" || kind == "iwim"; }
    /// True for the classical problems (every joint knows exactly one of qdd, tau; wrenches are
    /// inputs or zero; no sensors): tree orders and the RNEA/ABA references apply.
    bool classical() const;
};

/// What the CLI's --problem names: "id", "fd", or a YAML file ("hybrid" without a file: every
/// joint tau-known except none, i.e. the same as fd; a spec is needed to say which joints differ).
struct ProblemInput {
    std::string problem;        ///< id | fd | hybrid | path to SPEC.yaml
    bool floating_base = false;  ///< from the command line
};

/// Peek at a spec's floating_base and gravity settings before the model is loaded. Returns false
/// for presets.
bool spec_requests_floating_base(const ProblemInput& in);

/// Fixed joints the problem's force/torque sensors sit on (they must be kept as body boundaries
/// when the model is loaded): from the spec and from the URDF's <sensor> tags it selects.
std::vector<std::string> sensor_joints(const ProblemInput& in, const std::string& urdf_path);

/// The problem for a loaded model (loaded with the right base and with the sensors' fixed joints
/// kept). Throws InputError naming the spec file, line and the unknown joint, link or sensor.
struct LoadResult;
Problem run_problem(const ProblemInput& in, const LoadResult& loaded);
/// The same for a bare model (sensors then name bodies only).
Problem run_problem(const ProblemInput& in, const Model& model);

}  // namespace nelu
