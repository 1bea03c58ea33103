// frames.cpp: see frames.hpp.
#include "frames.hpp"

#include <cmath>

#include "numeric.hpp"

namespace nelu {
namespace {

using V = Vec3<double>;

double norm(const V& v) { return std::sqrt(dot(v, v)); }
V unit(const V& v) { return (1.0 / norm(v)) * v; }

/// A unit vector perpendicular to u: the URDF x (or y) axis with its u component removed.
V any_perpendicular(const V& u) {
    V e{{1, 0, 0}};
    V p = e - dot(e, u) * u;
    if (norm(p) < 1e-6) e = {{0, 1, 0}}, p = e - dot(e, u) * u;
    return unit(p);
}

/// The common normal's foot is used when it lies within this many times the distance to the
/// child's joint origin (a few link lengths); farther, the axes are nearly parallel.
constexpr double kMaxFootReach = 4;
/// A child's joint origin closer to axis i than this fraction of its distance lies on the axis.
constexpr double kOnAxis = 1e-12;

bool one_dof(const Body& b) { return b.type == JointType::Revolute || b.type == JointType::Prismatic; }

/// Internal frame of body i: z along its axis u, x along the common normal to the axis of `child`
/// (given in body-i coordinates by a point p and a direction w), origin at the normal's foot.
///
/// Any frame is exact (the equations hold in every body-fixed frame); the choice only decides how
/// cheap and how well conditioned the transforms are. So the frame is orthonormal to rounding
/// whatever the axes, and the common normal is taken only where it is well defined: for nearly
/// parallel axes (a CAD exporter's 1e-8 of noise on parallel joints) its foot lies far away, where
/// the transforms would carry large offsets that cancel, so the origin stays and x points towards
/// the child's axis instead (the child's transform is then general, not DH: exact, and a little
/// dearer).
Xform<double> dh_frame(const V& u, const V* p, const V* w) {
    double s = 0;
    V x{{0, 0, 0}};
    if (p) {
        const V n = cross(u, *w);  // the common normal's direction (skew or intersecting axes)
        const double nn = dot(n, n);
        const double reach = std::sqrt(dot(*p, *p));
        if (nn > 0) {
            // foot on axis i: s u with (s u - p - t w) . u = 0 and . w = 0, i.e. s = ((p x w) . n) / |n|^2
            const double foot = dot(cross(*p, *w), n) / nn;
            if (std::abs(foot) <= kMaxFootReach * reach) {
                s = foot;
                x = (1.0 / std::sqrt(nn)) * n;
                if (dot(*p, x) < -kOnAxis * reach) x = -1.0 * x;  // towards the child's axis (a >= 0)
            }
        }
        if (s == 0 && dot(x, x) == 0) {  // parallel, nearly parallel or far: x towards the child's axis
            const V perp = *p - dot(*p, u) * u;
            if (dot(perp, perp) > kOnAxis * kOnAxis * dot(*p, *p) && dot(perp, perp) > 0) x = unit(perp);
        }
    }
    if (dot(x, x) == 0) x = any_perpendicular(u);
    x = unit(x - dot(x, u) * u);  // orthonormal to rounding: the frame is a rotation, the axis is z
    V y = cross(u, x);
    Mat3<double> E{{{x[0], x[1], x[2]}, {y[0], y[1], y[2]}, {u[0], u[1], u[2]}}};  // rows: internal axes
    return {E, s * u};
}

double snap(double v, double tol) { return std::abs(v) < tol ? 0.0 : v; }

/// Decompose X = rotz(theta0) xlt(d z) rotx(alpha) xlt(a x) when X has that form (to rounding).
bool dh_parameters(const Xform<double>& X, InternalFrame& f) {
    const Mat3<double>& E = X.E;
    if (std::abs(E(2, 0)) > 1e-14) return false;
    f.alpha = std::atan2(-E(2, 1), E(2, 2));
    f.theta0 = std::atan2(-E(1, 0), E(0, 0));
    const double ca = std::cos(f.alpha), sa = std::sin(f.alpha);
    f.a = X.r[0];
    f.d = -X.r[1] * sa + X.r[2] * ca;
    // check by reconstruction
    Mat3<double> R = rot_z(std::cos(f.theta0), std::sin(f.theta0)) * rot_x(ca, sa);
    V r{{f.a, -f.d * sa, f.d * ca}};
    double err = norm(r - X.r);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) err = std::max(err, std::abs(R(i, j) - E(i, j)));
    // Exact to rounding, as the loader's snapping: the generated code must compute the loaded model.
    if (err > 1e-14 * (1 + norm(X.r))) return false;
    f.a = snap(f.a, 1e-15), f.d = snap(f.d, 1e-15), f.alpha = snap(f.alpha, 1e-15), f.theta0 = snap(f.theta0, 1e-15);
    return true;
}

}  // namespace

InternalModel choose_internal_frames(const Model& m) {
    const int nb = m.num_bodies();
    InternalModel im{m, std::vector<InternalFrame>(nb)};
    std::vector<int> first_child(nb, -1);
    for (int i = nb - 1; i >= 0; --i)
        if (m.bodies[i].parent >= 0 && one_dof(m.bodies[i])) first_child[m.bodies[i].parent] = i;
    for (int i = 0; i < nb; ++i) {
        const Body& b = m.bodies[i];
        if (!one_dof(b)) continue;
        const int c = first_child[i];
        V p, w;
        if (c >= 0) {
            const Xform<double>& XT = m.bodies[c].X_tree;
            p = XT.r, w = mul_transpose(XT.E, m.bodies[c].axis);
        }
        Xform<double> T = dh_frame(b.axis, c >= 0 ? &p : nullptr, c >= 0 ? &w : nullptr);
        bool identity = true;  // rounding noise removed: T is our choice, exactness is free
        for (int r = 0; r < 3; ++r) {
            T.r[r] = snap(T.r[r], 1e-15);
            for (int k = 0; k < 3; ++k) {
                T.E(r, k) = snap_unit(T.E(r, k), 1e-15);
                identity = identity && T.E(r, k) == (r == k ? 1.0 : 0.0);
            }
            identity = identity && T.r[r] == 0;
        }
        im.frames[i].T = T;
        im.frames[i].moved = !identity;
    }
    for (int i = 0; i < nb; ++i) {
        Body& b = im.model.bodies[i];
        InternalFrame& f = im.frames[i];
        const Xform<double> parent_inv = b.parent >= 0 ? inverse(im.frames[b.parent].T) : identity_xform<double>();
        b.X_tree = compose(compose(f.T, m.bodies[i].X_tree), parent_inv);
        b.I = transform_to_parent(inverse(f.T), m.bodies[i].I);
        if (f.moved) b.axis = {{0, 0, 1}};  // T maps the axis onto z (an unmoved frame has it there already)
        f.dh = one_dof(b) && b.parent >= 0 && dh_parameters(b.X_tree, f);
    }
    return im;
}

}  // namespace nelu
