// nelu/small_dense.hpp: small dense matrices and an LDL^T factorization for the seed algorithms'
// references (nelu/osim.hpp, nelu/constraint_fd.hpp, nelu/iwim.hpp), templated on the scalar.
//
// SmallMat holds at most 6 x 6 entries on the stack (constraint bases, constraint-space inertias,
// tip transforms); the LDL^T routines work on row-major arrays of any size (Lambda^-1 of several
// operational points, a dense M for comparison).
#pragma once

#include <cassert>

#include "nelu/spatial.hpp"

namespace nelu {

/// A dense matrix of at most 6 x 6 entries, row major.
template <class S> struct SmallMat {
    int rows = 0, cols = 0;
    S a[6][6];
    S& operator()(int i, int j) { return a[i][j]; }
    const S& operator()(int i, int j) const { return a[i][j]; }
};

template <class S> SmallMat<S> small_zero(int rows, int cols) {
    assert(rows <= 6 && cols <= 6);
    SmallMat<S> A;
    A.rows = rows, A.cols = cols;
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) A(i, j) = S(0);
    return A;
}
/// A B
template <class S> SmallMat<S> operator*(const SmallMat<S>& A, const SmallMat<S>& B) {
    assert(A.cols == B.rows);
    SmallMat<S> C = small_zero<S>(A.rows, B.cols);
    for (int i = 0; i < A.rows; ++i)
        for (int j = 0; j < B.cols; ++j) {
            if (A.cols == 0) continue;
            S s = A(i, 0) * B(0, j);
            for (int k = 1; k < A.cols; ++k) s = s + A(i, k) * B(k, j);
            C(i, j) = s;
        }
    return C;
}
/// A^T B
template <class S> SmallMat<S> mul_tn(const SmallMat<S>& A, const SmallMat<S>& B) {
    assert(A.rows == B.rows);
    SmallMat<S> C = small_zero<S>(A.cols, B.cols);
    for (int i = 0; i < A.cols; ++i)
        for (int j = 0; j < B.cols; ++j) {
            if (A.rows == 0) continue;
            S s = A(0, i) * B(0, j);
            for (int k = 1; k < A.rows; ++k) s = s + A(k, i) * B(k, j);
            C(i, j) = s;
        }
    return C;
}
/// A - B
template <class S> SmallMat<S> operator-(const SmallMat<S>& A, const SmallMat<S>& B) {
    assert(A.rows == B.rows && A.cols == B.cols);
    SmallMat<S> C = A;
    for (int i = 0; i < A.rows; ++i)
        for (int j = 0; j < A.cols; ++j) C(i, j) = A(i, j) - B(i, j);
    return C;
}
/// -A
template <class S> SmallMat<S> operator-(const SmallMat<S>& A) {
    SmallMat<S> C = A;
    for (int i = 0; i < A.rows; ++i)
        for (int j = 0; j < A.cols; ++j) C(i, j) = -A(i, j);
    return C;
}
/// y = A x (x has A.cols entries, y A.rows)
template <class S> void mul_vec(const SmallMat<S>& A, const S* x, S* y) {
    for (int i = 0; i < A.rows; ++i) {
        S s = A.cols ? A(i, 0) * x[0] : S(0);
        for (int k = 1; k < A.cols; ++k) s = s + A(i, k) * x[k];
        y[i] = s;
    }
}
/// y = A^T x (x has A.rows entries, y A.cols)
template <class S> void mul_vec_t(const SmallMat<S>& A, const S* x, S* y) {
    for (int i = 0; i < A.cols; ++i) {
        S s = A.rows ? A(0, i) * x[0] : S(0);
        for (int k = 1; k < A.rows; ++k) s = s + A(k, i) * x[k];
        y[i] = s;
    }
}
/// M A for a 6 x 6 M and a 6 x c A.
template <class S> SmallMat<S> operator*(const Mat6<S>& M, const SmallMat<S>& A) {
    assert(A.rows == 6);
    SmallMat<S> C = small_zero<S>(6, A.cols);
    for (int j = 0; j < A.cols; ++j) {
        SVec<S> col;
        for (int k = 0; k < 6; ++k) col[k] = A(k, j);
        col = M * col;
        for (int k = 0; k < 6; ++k) C(k, j) = col[k];
    }
    return C;
}
/// Column j of a 6-row matrix as a spatial vector, and back.
template <class S> SVec<S> column(const SmallMat<S>& A, int j) {
    SVec<S> v;
    for (int k = 0; k < 6; ++k) v[k] = A(k, j);
    return v;
}
template <class S> void set_column(SmallMat<S>& A, int j, const SVec<S>& v) {
    for (int k = 0; k < 6; ++k) A(k, j) = v[k];
}

// ---------------------------------------------------------------------------------------------
/// A = L D L^T in place (n x n row major, symmetric; only the lower triangle is read): L unit lower
/// in the strict lower part, D on the diagonal. False when a pivot is not above rel_tol times A's
/// largest diagonal entry (with rel_tol = 0: not positive; A is not positive definite); A is then
/// left partly factored.
template <class S> bool ldlt_factor(int n, S* A, double rel_tol = 0) {
    S threshold = S(0);
    if (rel_tol > 0) {
        for (int j = 0; j < n; ++j) threshold = A[j * n + j] > threshold ? A[j * n + j] : threshold;
        threshold = S(rel_tol) * threshold;
    }
    for (int j = 0; j < n; ++j) {
        for (int k = 0; k < j; ++k) {  // column j of L D: A(i, j) -= L(i, k) D(k) L(j, k)
            S lkd = A[j * n + k] * A[k * n + k];
            for (int i = j; i < n; ++i) A[i * n + j] = A[i * n + j] - A[i * n + k] * lkd;
        }
        if (!(A[j * n + j] > threshold)) return false;
        for (int i = j + 1; i < n; ++i) A[i * n + j] = A[i * n + j] / A[j * n + j];
    }
    return true;
}
/// b = (L D L^T)^-1 b with the factor of ldlt_factor.
template <class S> void ldlt_solve(int n, const S* F, S* b) {
    for (int i = 0; i < n; ++i)  // b = L \ b
        for (int k = 0; k < i; ++k) b[i] = b[i] - F[i * n + k] * b[k];
    for (int i = 0; i < n; ++i) b[i] = b[i] / F[i * n + i];  // b = D \ b
    for (int i = n - 1; i >= 0; --i)  // b = L^T \ b
        for (int k = i + 1; k < n; ++k) b[i] = b[i] - F[k * n + i] * b[k];
}
/// Ainv = A^-1 for a symmetric positive-definite A (n x n row major; `work` holds n * n + n
/// scalars). Symmetric exactly: the upper triangle is computed and mirrored. False when A is not
/// positive definite (a pivot not above rel_tol times the largest diagonal entry, see ldlt_factor).
template <class S> bool spd_inverse(int n, const S* A, S* Ainv, S* work, double rel_tol = 0) {
    S* F = work;
    S* e = work + n * n;
    for (int i = 0; i < n * n; ++i) F[i] = A[i];
    if (!ldlt_factor(n, F, rel_tol)) return false;
    for (int c = 0; c < n; ++c) {
        for (int r = 0; r < n; ++r) e[r] = S(r == c ? 1 : 0);
        ldlt_solve(n, F, e);
        for (int r = 0; r <= c; ++r) Ainv[r * n + c] = Ainv[c * n + r] = e[r];
    }
    return true;
}
/// A^-1 of a small symmetric positive-definite matrix; false when it is not positive definite.
template <class S> bool spd_inverse(const SmallMat<S>& A, SmallMat<S>& Ainv) {
    assert(A.rows == A.cols && A.rows <= 6);
    const int n = A.rows;
    if (n > 6) return false;  // a SmallMat holds at most 6 x 6 (small_zero asserts it); lets GCC bound the buffers
    Ainv = small_zero<S>(n, n);
    if (n == 0) return true;
    S a[36]{}, ainv[36]{}, work[42]{};  // initialized: GCC cannot see that n entries are written
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) a[i * n + j] = A(i, j);
    if (!spd_inverse(n, a, ainv, work)) return false;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) Ainv(i, j) = ainv[i * n + j];
    return true;
}
/// M^-1 of a 6 x 6 symmetric positive-definite matrix; false when it is not positive definite.
template <class S> bool spd_inverse(const Mat6<S>& M, Mat6<S>& Minv) {
    S a[36]{}, ainv[36]{}, work[42]{};  // initialized: GCC cannot see that n entries are written
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) a[i * 6 + j] = M(i, j);
    if (!spd_inverse(6, a, ainv, work)) return false;
    for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) Minv(i, j) = ainv[i * 6 + j];
    return true;
}

}  // namespace nelu
