// nelu/spatial.hpp: spatial vector algebra in Featherstone's notation, templated on the scalar.
//
// Conventions (Featherstone, "Rigid Body Dynamics Algorithms", ch. 2; Nori):
//   motion vector  m = [omega; v]   (angular first)
//   force vector   f = [n; f]       (angular first)
//   Xform{E, r}    the Pluecker transform  X = [E 0; -E rx E]  from frame A to frame B, where E
//                  rotates A coordinates into B coordinates and r is the position of B's origin
//                  expressed in A coordinates (Featherstone's plx(E, r)).
// Every function is written for an arbitrary scalar type S so that the reference algorithms run
// in double, float and the operation-counting scalar (nelu/counting.hpp) through one code path.
#pragma once

#include <cmath>

namespace nelu {

template <class S> struct Vec3 {
    S x[3];
    S& operator[](int i) { return x[i]; }
    const S& operator[](int i) const { return x[i]; }
};

template <class S> struct Mat3 {
    S m[3][3];  // row major
    S& operator()(int i, int j) { return m[i][j]; }
    const S& operator()(int i, int j) const { return m[i][j]; }
};

/// Spatial vector, angular part first: [w; l].
template <class S> struct SVec {
    Vec3<S> w;  // omega (motion) or moment n (force)
    Vec3<S> l;  // v (motion) or linear force f (force)
    S operator[](int i) const { return i < 3 ? w[i] : l[i - 3]; }
    S& operator[](int i) { return i < 3 ? w[i] : l[i - 3]; }
};

/// Dense 6x6 matrix (articulated inertias, mass-matrix blocks).
template <class S> struct Mat6 {
    S m[6][6];
    S& operator()(int i, int j) { return m[i][j]; }
    const S& operator()(int i, int j) const { return m[i][j]; }
};

/// Pluecker transform X = [E 0; -E rx E] (Featherstone's plx).
template <class S> struct Xform {
    Mat3<S> E;
    Vec3<S> r;
};

/// Rigid-body spatial inertia about the body origin: m, h = m c, Ibar = Ic - m cx cx.
/// As a matrix, I = [Ibar hx; hx^T m1].
template <class S> struct Inertia {
    S m;
    Vec3<S> h;
    Mat3<S> Ibar;  // symmetric
};

// ---------------------------------------------------------------------------------------------
// 3-vectors and 3x3 matrices
template <class S> Vec3<S> zero3() { return {{S(0), S(0), S(0)}}; }
template <class S> Mat3<S> identity3() {
    return {{{S(1), S(0), S(0)}, {S(0), S(1), S(0)}, {S(0), S(0), S(1)}}};
}
template <class S> Mat3<S> zero_mat3() {
    return {{{S(0), S(0), S(0)}, {S(0), S(0), S(0)}, {S(0), S(0), S(0)}}};
}
template <class S> Vec3<S> operator+(const Vec3<S>& a, const Vec3<S>& b) {
    return {{a[0] + b[0], a[1] + b[1], a[2] + b[2]}};
}
template <class S> Vec3<S> operator-(const Vec3<S>& a, const Vec3<S>& b) {
    return {{a[0] - b[0], a[1] - b[1], a[2] - b[2]}};
}
template <class S> Vec3<S> operator-(const Vec3<S>& a) { return {{-a[0], -a[1], -a[2]}}; }
template <class S> Vec3<S> operator*(const S& s, const Vec3<S>& a) {
    return {{s * a[0], s * a[1], s * a[2]}};
}
template <class S> S dot(const Vec3<S>& a, const Vec3<S>& b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
/// a x b
template <class S> Vec3<S> cross(const Vec3<S>& a, const Vec3<S>& b) {
    return {{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}};
}
/// A b
template <class S> Vec3<S> operator*(const Mat3<S>& A, const Vec3<S>& b) {
    Vec3<S> y;
    for (int i = 0; i < 3; ++i) y[i] = A(i, 0) * b[0] + A(i, 1) * b[1] + A(i, 2) * b[2];
    return y;
}
/// A^T b
template <class S> Vec3<S> mul_transpose(const Mat3<S>& A, const Vec3<S>& b) {
    Vec3<S> y;
    for (int i = 0; i < 3; ++i) y[i] = A(0, i) * b[0] + A(1, i) * b[1] + A(2, i) * b[2];
    return y;
}
/// A B
template <class S> Mat3<S> operator*(const Mat3<S>& A, const Mat3<S>& B) {
    Mat3<S> C;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C(i, j) = A(i, 0) * B(0, j) + A(i, 1) * B(1, j) + A(i, 2) * B(2, j);
    return C;
}
template <class S> Mat3<S> transpose(const Mat3<S>& A) {
    Mat3<S> T;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) T(i, j) = A(j, i);
    return T;
}
template <class S> Mat3<S> operator+(const Mat3<S>& A, const Mat3<S>& B) {
    Mat3<S> C;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C(i, j) = A(i, j) + B(i, j);
    return C;
}
/// rx, the cross-product matrix: skew(r) b = r x b
template <class S> Mat3<S> skew(const Vec3<S>& r) {
    return {{{S(0), -r[2], r[1]}, {r[2], S(0), -r[0]}, {-r[1], r[0], S(0)}}};
}

// ---------------------------------------------------------------------------------------------
// Spatial vectors
template <class S> SVec<S> zero6() { return {zero3<S>(), zero3<S>()}; }
template <class S> SVec<S> operator+(const SVec<S>& a, const SVec<S>& b) { return {a.w + b.w, a.l + b.l}; }
template <class S> SVec<S> operator-(const SVec<S>& a, const SVec<S>& b) { return {a.w - b.w, a.l - b.l}; }
template <class S> SVec<S> operator-(const SVec<S>& a) { return {-a.w, -a.l}; }
template <class S> SVec<S> operator*(const S& s, const SVec<S>& a) { return {s * a.w, s * a.l}; }
/// m . f (power of a force on a motion)
template <class S> S dot(const SVec<S>& a, const SVec<S>& b) { return dot(a.w, b.w) + dot(a.l, b.l); }

/// v x m (spatial cross product for motion vectors, Featherstone's crm(v) m)
template <class S> SVec<S> cross_motion(const SVec<S>& v, const SVec<S>& m) {
    return {cross(v.w, m.w), cross(v.w, m.l) + cross(v.l, m.w)};
}
/// v x* f (spatial cross product for force vectors, Featherstone's crf(v) f)
template <class S> SVec<S> cross_force(const SVec<S>& v, const SVec<S>& f) {
    return {cross(v.w, f.w) + cross(v.l, f.l), cross(v.w, f.l)};
}

// ---------------------------------------------------------------------------------------------
// Pluecker transforms
template <class S> Xform<S> identity_xform() { return {identity3<S>(), zero3<S>()}; }

/// X m = [E w; E (v - r x w)]
template <class S> SVec<S> apply(const Xform<S>& X, const SVec<S>& m) {
    return {X.E * m.w, X.E * (m.l - cross(X.r, m.w))};
}
/// X^-1 m = [E^T w; E^T v + r x E^T w]
template <class S> SVec<S> apply_inverse(const Xform<S>& X, const SVec<S>& m) {
    Vec3<S> w = mul_transpose(X.E, m.w);
    return {w, mul_transpose(X.E, m.l) + cross(X.r, w)};
}
/// X^T f = [E^T n + r x E^T f; E^T f]  (X* from B back to A: force transform of X^-1)
template <class S> SVec<S> apply_transpose(const Xform<S>& X, const SVec<S>& f) {
    Vec3<S> fl = mul_transpose(X.E, f.l);
    return {mul_transpose(X.E, f.w) + cross(X.r, fl), fl};
}
/// X* f = X^-T f = [E (n - r x f); E f]  (force transform from A to B)
template <class S> SVec<S> apply_force(const Xform<S>& X, const SVec<S>& f) {
    return {X.E * (f.w - cross(X.r, f.l)), X.E * f.l};
}
/// B_X_C = (B_X_A)(A_X_C): compose(XBA, XAC); E = E_BA E_AC, r = r_AC + E_AC^T r_BA
template <class S> Xform<S> compose(const Xform<S>& XBA, const Xform<S>& XAC) {
    return {XBA.E * XAC.E, XAC.r + mul_transpose(XAC.E, XBA.r)};
}
/// A_X_B = (B_X_A)^-1: E^T, -E r
template <class S> Xform<S> inverse(const Xform<S>& X) { return {transpose(X.E), -(X.E * X.r)}; }

/// The 6x6 matrix of X acting on motion vectors.
template <class S> Mat6<S> to_matrix(const Xform<S>& X) {
    Mat6<S> M;
    Mat3<S> ErX = X.E * skew(X.r);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            M(i, j) = X.E(i, j);
            M(i, j + 3) = S(0);
            M(i + 3, j) = -ErX(i, j);
            M(i + 3, j + 3) = X.E(i, j);
        }
    return M;
}

// ---------------------------------------------------------------------------------------------
// Rigid-body inertia
/// I m = [Ibar w + h x v; m v - h x w]
template <class S> SVec<S> operator*(const Inertia<S>& I, const SVec<S>& v) {
    return {I.Ibar * v.w + cross(I.h, v.l), I.m * v.l - cross(I.h, v.w)};
}
template <class S> Inertia<S> operator+(const Inertia<S>& a, const Inertia<S>& b) {
    return {a.m + b.m, a.h + b.h, a.Ibar + b.Ibar};
}
/// Spatial inertia from mass, centre of mass c and rotational inertia Ic about the centre of mass.
template <class S> Inertia<S> inertia_from_com(const S& mass, const Vec3<S>& c, const Mat3<S>& Ic) {
    Mat3<S> cx = skew(c);
    Mat3<S> Ibar = Ic;
    Mat3<S> cxcx = cx * cx;
    for (int i = 0; i < 3; ++i)
        for (int j = i; j < 3; ++j) Ibar(i, j) = Ibar(j, i) = Ic(i, j) - mass * cxcx(i, j);  // symmetric exactly
    return {mass, mass * c, Ibar};
}
/// The inverse of inertia_from_com: the centre of mass c = h / m (0 for a massless body) and the
/// rotational inertia about it, I_c = Ibar - m (|c|^2 1 - c c^T).
template <class S> void com_inertia(const Inertia<S>& I, Vec3<S>& c, Mat3<S>& Ic) {
    for (int k = 0; k < 3; ++k) c[k] = I.m > S(0) ? I.h[k] / I.m : S(0);
    const S cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
    for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k) Ic(r, k) = I.Ibar(r, k) - I.m * ((r == k ? cc : S(0)) - c[r] * c[k]);
}
/// The inertia of the same body expressed in frame A, given X = B_X_A: I_A = X^T I_B X.
/// Closed form (Featherstone eq. 2.66 with r, E): m' = m, h' = E^T h + m r,
/// Ibar' = E^T Ibar E - rx (E^T h)x - (E^T h + m r)x rx.
template <class S> Inertia<S> transform_to_parent(const Xform<S>& X, const Inertia<S>& I) {
    Vec3<S> Eh = mul_transpose(X.E, I.h);
    Vec3<S> hp = Eh + I.m * X.r;
    Mat3<S> Ib = transpose(X.E) * I.Ibar * X.E;
    Mat3<S> rx = skew(X.r), Ehx = skew(Eh), hpx = skew(hp);
    Mat3<S> A = rx * Ehx, B = hpx * rx;
    for (int i = 0; i < 3; ++i)  // upper triangle, mirrored: symmetric exactly, not up to rounding
        for (int j = i; j < 3; ++j) Ib(i, j) = Ib(j, i) = Ib(i, j) - A(i, j) - B(i, j);
    return {I.m, hp, Ib};
}
/// The 6x6 matrix of a rigid-body inertia.
template <class S> Mat6<S> to_matrix(const Inertia<S>& I) {
    Mat6<S> M;
    Mat3<S> hx = skew(I.h);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            M(i, j) = I.Ibar(i, j);
            M(i, j + 3) = hx(i, j);
            M(i + 3, j) = -hx(i, j);  // hx^T
            M(i + 3, j + 3) = i == j ? I.m : S(0);
        }
    return M;
}

// ---------------------------------------------------------------------------------------------
// Dense 6x6
template <class S> Mat6<S> zero_mat6() {
    Mat6<S> M;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) M(i, j) = S(0);
    return M;
}
template <class S> SVec<S> operator*(const Mat6<S>& M, const SVec<S>& v) {
    SVec<S> y;
    for (int i = 0; i < 6; ++i) {
        S s = M(i, 0) * v[0];
        for (int j = 1; j < 6; ++j) s = s + M(i, j) * v[j];
        y[i] = s;
    }
    return y;
}
template <class S> Mat6<S> operator+(const Mat6<S>& A, const Mat6<S>& B) {
    Mat6<S> C;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) C(i, j) = A(i, j) + B(i, j);
    return C;
}
/// X^T H X for a symmetric H (articulated inertia of a child expressed in its parent's frame).
/// Computes the upper triangle and mirrors it.
template <class S> Mat6<S> congruence(const Xform<S>& X, const Mat6<S>& H) {
    Mat6<S> Xm = to_matrix(X), HX, R;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
            // Xm has a zero upper-right block: (H X)(i, j) = sum_k H(i, k) Xm(k, j)
            int k0 = j < 3 ? 0 : 3;
            S s = H(i, k0) * Xm(k0, j);
            for (int k = k0 + 1; k < 6; ++k) s = s + H(i, k) * Xm(k, j);
            HX(i, j) = s;
        }
    for (int i = 0; i < 6; ++i)
        for (int j = i; j < 6; ++j) {
            int k0 = i < 3 ? 0 : 3;
            S s = Xm(k0, i) * HX(k0, j);
            for (int k = k0 + 1; k < 6; ++k) s = s + Xm(k, i) * HX(k, j);
            R(i, j) = s;
            R(j, i) = s;
        }
    return R;
}

// ---------------------------------------------------------------------------------------------
// Elementary rotations (coordinate transforms, Featherstone's rx, ry, rz: E maps A to B coordinates
// when B is A rotated by angle t about the axis).
template <class S> Mat3<S> rot_x(const S& c, const S& s) {
    return {{{S(1), S(0), S(0)}, {S(0), c, s}, {S(0), -s, c}}};
}
template <class S> Mat3<S> rot_y(const S& c, const S& s) {
    return {{{c, S(0), -s}, {S(0), S(1), S(0)}, {s, S(0), c}}};
}
template <class S> Mat3<S> rot_z(const S& c, const S& s) {
    return {{{c, s, S(0)}, {-s, c, S(0)}, {S(0), S(0), S(1)}}};
}
/// Coordinate transform E = R^T for a rotation R of angle t (cos c, sin s) about the unit axis u:
/// E = c 1 + (1 - c) u u^T - s ux.
template <class S> Mat3<S> rot_axis(const Vec3<S>& u, const S& c, const S& s) {
    Mat3<S> E;
    S omc = S(1) - c;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) E(i, j) = omc * u[i] * u[j];
    for (int i = 0; i < 3; ++i) E(i, i) = E(i, i) + c;
    E(0, 1) = E(0, 1) + s * u[2];
    E(0, 2) = E(0, 2) - s * u[1];
    E(1, 0) = E(1, 0) - s * u[2];
    E(1, 2) = E(1, 2) + s * u[0];
    E(2, 0) = E(2, 0) + s * u[1];
    E(2, 1) = E(2, 1) - s * u[0];
    return E;
}
/// Rotation matrix R (body to parent) of the unit quaternion (x, y, z, w).
template <class S> Mat3<S> quat_to_rotation(const S& x, const S& y, const S& z, const S& w) {
    S xx = x * x, yy = y * y, zz = z * z, xy = x * y, xz = x * z, yz = y * z, wx = w * x, wy = w * y,
      wz = w * z;
    return {{{S(1) - S(2) * (yy + zz), S(2) * (xy - wz), S(2) * (xz + wy)},
             {S(2) * (xy + wz), S(1) - S(2) * (xx + zz), S(2) * (yz - wx)},
             {S(2) * (xz - wy), S(2) * (yz + wx), S(1) - S(2) * (xx + yy)}}};
}

}  // namespace nelu
