// robot_gen.cpp: random URDF robots; topology and distributions are documented in robot_gen.hpp.
//
// Determinism: the only randomness source is std::mt19937_64 (its output sequence is fixed by the
// standard); uniform reals are derived from it by hand, never through the implementation-defined
// std::*_distribution; all arithmetic is +, -, *, / and sqrt (correctly rounded in IEEE 754, no
// libm transcendentals) with multiply-add contraction switched off below, since fused and unfused
// multiply-adds round differently (GCC contracts by default on FMA targets); every number is
// printed with fmt's exact "{:.17g}". Flags that override the pragmas (clang -ffp-contract=fast,
// -ffast-math) void the guarantee; the golden test in tests/test_robot_gen.cpp detects it.
#include "robot_gen.hpp"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#elif defined(_MSC_VER)
#pragma fp_contract(off)
#endif

namespace nelu {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kMaxLinks = 100000;
constexpr const char* kLimit =
    R"(<limit lower="-3.14159265358979" upper="3.14159265358979" effort="100" velocity="10"/>)";

/// Reproducible uniform reals over std::mt19937_64.
class Rng {
public:
    explicit Rng(std::uint64_t seed) : engine_(seed) {}
    /// Uniform in [0, 1) with 53 random bits.
    double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
    /// Uniform in [lo, hi).
    double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }

private:
    std::mt19937_64 engine_;
};

struct Vec { double x = 0, y = 0, z = 0; };

/// Symmetric 3x3 tensor, the six URDF components.
struct Tensor { double xx = 0, xy = 0, xz = 0, yy = 0, yz = 0, zz = 0; };

/// 3x3 rotation matrix, row major.
using Rot = double[3][3];

/// The numbers of one generated joint: its origin in the parent frame and its axis.
struct JointSpec { int parent = 0; Vec xyz, rpy, axis; };

/// The numbers of one generated link: mass, centre of mass and inertia about it.
struct LinkSpec { double mass = 0; Vec com; Tensor inertia; };

/// Throws std::invalid_argument naming the first out-of-range option.
void validate(const RobotGenOptions& opt) {
    if (opt.links < 1)
        throw std::invalid_argument(fmt::format("--links must be at least 1 (got {})", opt.links));
    if (opt.links > kMaxLinks)
        throw std::invalid_argument(
            fmt::format("--links must be at most {} (got {})", kMaxLinks, opt.links));
    if (opt.branching < 1)
        throw std::invalid_argument(
            fmt::format("--branching must be at least 1 (got {})", opt.branching));
    if (opt.mimic < 0 || opt.mimic >= opt.links)
        throw std::invalid_argument(
            fmt::format("--mimic must be in [0, --links - 1] (got {} for {} links)", opt.mimic, opt.links));
    if (!opt.base && opt.mimic > 0 && opt.mimic >= opt.links - 1)
        throw std::invalid_argument(fmt::format(
            "--mimic must be in [0, --links - 2] with --no-base (got {} for {} links): joint2 would mimic the absent joint1",
            opt.mimic, opt.links));
    for (char c : opt.name)
        if (static_cast<unsigned char>(c) < 0x20)
            throw std::invalid_argument("--name must not contain control characters");
}

/// Parent of body i (1-based, 0 = base): i - 1 for chains, floor((i + B - 2) / B) for trees.
int parent_of(const RobotGenOptions& opt, int i) {
    if (opt.shape == RobotGenOptions::Shape::Chain) return i - 1;
    const std::int64_t b = opt.branching;
    return static_cast<int>((i + b - 2) / b);
}

/// "chain<N>_s<seed>" or "tree<N>_b<B>_s<seed>" unless the options name the robot.
std::string robot_name(const RobotGenOptions& opt) {
    if (!opt.name.empty()) return opt.name;
    if (opt.shape == RobotGenOptions::Shape::Chain)
        return fmt::format("chain{}_s{}", opt.links, opt.seed);
    return fmt::format("tree{}_b{}_s{}", opt.links, opt.branching, opt.seed);
}

/// `s` with the XML special characters replaced by entities, for an attribute value.
std::string xml_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

/// The provenance comment; spelled without "--", which XML forbids inside comments.
std::string provenance_comment(const RobotGenOptions& opt) {
    const bool chain = opt.shape == RobotGenOptions::Shape::Chain;
    const std::string branching = chain ? "" : fmt::format(" branching={}", opt.branching);
    return fmt::format(
        "<!-- Generated by `nelu robot gen` with options: shape={} links={}{} transforms={} "
        "seed={}{}{} -->\n",
        chain ? "chain" : "tree", opt.links, branching,
        opt.transforms == RobotGenOptions::Transforms::Dh ? "dh" : "general", opt.seed,
        opt.mimic > 0 ? fmt::format(" mimic={}", opt.mimic) : std::string(), opt.base ? "" : " base=none");
}

/// Exact, platform-independent text of a double; -0 prints as 0.
std::string num(double v) { return fmt::format("{:.17g}", v + 0.0); }

/// "x y z" of a vector.
std::string triple(const Vec& v) { return num(v.x) + " " + num(v.y) + " " + num(v.z); }

/// Unit vector uniform on the sphere (rejection sampling in the cube).
Vec random_unit_vector(Rng& rng) {
    for (;;) {
        const Vec v{rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1)};
        const double n2 = v.x * v.x + v.y * v.y + v.z * v.z;
        if (n2 > 1e-6 && n2 <= 1) {
            const double n = std::sqrt(n2);
            return {v.x / n, v.y / n, v.z / n};
        }
    }
}

/// Rotation matrix of a uniformly random unit quaternion (rejection sampling in the 4-cube).
void random_rotation(Rng& rng, Rot& r) {
    double w, x, y, z;
    for (;;) {
        w = rng.uniform(-1, 1), x = rng.uniform(-1, 1);
        y = rng.uniform(-1, 1), z = rng.uniform(-1, 1);
        const double n2 = w * w + x * x + y * y + z * z;
        if (n2 > 1e-6 && n2 <= 1) {
            const double n = std::sqrt(n2);
            w /= n, x /= n, y /= n, z /= n;
            break;
        }
    }
    r[0][0] = 1 - 2 * (y * y + z * z), r[0][1] = 2 * (x * y - w * z), r[0][2] = 2 * (x * z + w * y);
    r[1][0] = 2 * (x * y + w * z), r[1][1] = 1 - 2 * (x * x + z * z), r[1][2] = 2 * (y * z - w * x);
    r[2][0] = 2 * (x * z - w * y), r[2][1] = 2 * (y * z + w * x), r[2][2] = 1 - 2 * (x * x + y * y);
}

/// asin(s) for s in [-1, 1] to a few ulp from +, -, *, / and sqrt only: the same on every platform.
double portable_asin(double s) {
    // asin(s) = 2 atan(t) with t = s / (1 + sqrt(1 - s^2)), |t| <= 1; two halvings
    // atan(t) = 2 atan(t / (1 + sqrt(1 + t^2))) bring |t| <= tan(pi/16) < 0.2, where the atan
    // series t - t^3/3 + t^5/5 - ... is below 1e-19 relative after 13 terms (Horner form).
    double t = s / (1 + std::sqrt((1 - s) * (1 + s)));
    for (int halving = 0; halving < 2; ++halving) t = t / (1 + std::sqrt(1 + t * t));
    const double t2 = t * t;
    double sum = 0;
    for (int k = 12; k >= 0; --k) sum = 1.0 / (2 * k + 1) - t2 * sum;
    return 8 * t * sum;
}

/// URDF roll-pitch-yaw of a uniformly random rotation: for R = Rz(yaw) Ry(pitch) Rx(roll) the
/// Haar measure is cos(pitch) droll dpitch dyaw, so pitch = asin(uniform in [-1, 1]).
Vec random_rpy(Rng& rng) {
    const double roll = rng.uniform(-kPi, kPi);
    const double pitch = portable_asin(rng.uniform(-1, 1));
    const double yaw = rng.uniform(-kPi, kPi);
    return {roll, pitch, yaw};
}

/// Principal moments about the centre of a solid box of mass m and sides a, b, c along x, y, z.
Vec box_moments(double m, double a, double b, double c) {
    return {m * (b * b + c * c) / 12, m * (a * a + c * c) / 12, m * (a * a + b * b) / 12};
}

/// R diag(d) R^T, each entry computed once so the tensor is exactly symmetric.
Tensor rotated_inertia(const Rot& r, const Vec& d) {
    const double dd[3] = {d.x, d.y, d.z};
    auto entry = [&](int j, int k) {
        return r[j][0] * dd[0] * r[k][0] + r[j][1] * dd[1] * r[k][1] + r[j][2] * dd[2] * r[k][2];
    };
    return {entry(0, 0), entry(0, 1), entry(0, 2), entry(1, 1), entry(1, 2), entry(2, 2)};
}

/// Joint and link of body i in Dh mode; len[i] is drawn here, len[parent] is already known.
void dh_body(Rng& rng, int parent, double& len_i, double len_parent, JointSpec& j, LinkSpec& l) {
    j.parent = parent;
    j.axis = {0, 0, 1};
    j.xyz = {len_parent, 0, 0};
    j.rpy = {rng.uniform(-kPi, kPi), 0, 0};
    len_i = rng.uniform(0.2, 1);
    l.mass = rng.uniform(0.5, 2);
    l.com = {len_i * 0.5, 0, 0};
    const double b = rng.uniform(0.05, 0.2), c = rng.uniform(0.05, 0.2);
    const Vec d = box_moments(l.mass, len_i, b, c);
    l.inertia = {d.x, 0, 0, d.y, 0, d.z};
}

/// Joint and link of body i in General mode.
void general_body(Rng& rng, int parent, JointSpec& j, LinkSpec& l) {
    j.parent = parent;
    j.axis = random_unit_vector(rng);
    j.xyz = {rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5)};
    j.rpy = random_rpy(rng);
    l.mass = rng.uniform(0.5, 2);
    l.com = {rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3), rng.uniform(-0.3, 0.3)};
    const double a = rng.uniform(0.1, 1), b = rng.uniform(0.1, 1), c = rng.uniform(0.1, 1);
    Rot r;
    random_rotation(rng, r);
    l.inertia = rotated_inertia(r, box_moments(l.mass, a, b, c));
}

/// Appends the <link> element of body i.
void write_link(std::string& out, int i, const LinkSpec& l) {
    const Tensor& t = l.inertia;
    fmt::format_to(std::back_inserter(out),
                   "  <link name=\"link{}\">\n"
                   "    <inertial>\n"
                   "      <origin xyz=\"{}\" rpy=\"0 0 0\"/>\n"
                   "      <mass value=\"{}\"/>\n"
                   "      <inertia ixx=\"{}\" ixy=\"{}\" ixz=\"{}\""
                   " iyy=\"{}\" iyz=\"{}\" izz=\"{}\"/>\n"
                   "    </inertial>\n"
                   "  </link>\n",
                   i, triple(l.com), num(l.mass), num(t.xx), num(t.xy), num(t.xz), num(t.yy),
                   num(t.yz), num(t.zz));
}

/// Appends the <joint> element connecting body i to its parent (with <mimic> of joint i-1 when
/// `mimic`).
void write_joint(std::string& out, int i, const JointSpec& j, bool mimic) {
    const std::string parent = j.parent == 0 ? "base" : fmt::format("link{}", j.parent);
    std::string tag;
    if (mimic) {
        static const double mult[4] = {1, -1, 0.5, -2}, off[4] = {0, 1.5707963267948966, 0.1, -0.2};
        tag = fmt::format("    <mimic joint=\"joint{}\" multiplier=\"{}\" offset=\"{}\"/>\n", i - 1, num(mult[i % 4]), num(off[i % 4]));
    }
    fmt::format_to(std::back_inserter(out),
                   "  <joint name=\"joint{}\" type=\"revolute\">\n"
                   "    <parent link=\"{}\"/>\n"
                   "    <child link=\"link{}\"/>\n"
                   "    <origin xyz=\"{}\" rpy=\"{}\"/>\n"
                   "    <axis xyz=\"{}\"/>\n"
                   "    {}\n"
                   "{}"
                   "  </joint>\n",
                   i, parent, i, triple(j.xyz), triple(j.rpy), triple(j.axis), kLimit, tag);
}

}  // namespace

std::string generate_robot_urdf(const RobotGenOptions& opt) {
    validate(opt);
    Rng rng(opt.seed);
    const bool dh = opt.transforms == RobotGenOptions::Transforms::Dh;
    std::vector<double> len(static_cast<std::size_t>(opt.links) + 1, 0.0);
    std::string out = provenance_comment(opt);
    out += fmt::format("<robot name=\"{}\">\n", xml_escape(robot_name(opt)));
    if (opt.base) out += "  <link name=\"base\"/>\n";
    for (int i = 1; i <= opt.links; ++i) {
        const int parent = parent_of(opt, i);
        JointSpec j;
        LinkSpec l;
        if (dh)
            dh_body(rng, parent, len[i], len[parent], j, l);
        else
            general_body(rng, parent, j, l);
        write_link(out, i, l);
        if (opt.base || i > 1) write_joint(out, i, j, i > opt.links - opt.mimic);
    }
    out += "</robot>\n";
    return out;
}

}  // namespace nelu
