// nelu/counting.hpp: an operation-counting scalar.
//
// Counted wraps a double and counts every arithmetic operation done on it: mul, add (additions
// and subtractions), div, sqrt, sin, cos. Negation is free, as in the published counts. Running a templated algorithm with S = Counted gives its
// exact operation count on a given model. Counters are thread-local; reset them with
// OpCounter::reset() and read them with OpCounter::get().
#pragma once

#include <cmath>
#include <cstdint>

namespace nelu {

struct OpCounts {
    std::int64_t mul = 0, add = 0, div = 0, sqrt = 0, sin = 0, cos = 0;
    OpCounts& operator+=(const OpCounts& o) {
        mul += o.mul, add += o.add, div += o.div, sqrt += o.sqrt, sin += o.sin, cos += o.cos;
        return *this;
    }
    friend OpCounts operator-(OpCounts a, const OpCounts& b) {
        a.mul -= b.mul, a.add -= b.add, a.div -= b.div, a.sqrt -= b.sqrt, a.sin -= b.sin, a.cos -= b.cos;
        return a;
    }
};

struct OpCounter {
    static OpCounts& get() {
        static thread_local OpCounts counts;
        return counts;
    }
    static void reset() { get() = OpCounts{}; }
};

/// A double that counts the operations done on it.
struct Counted {
    double v = 0.0;
    Counted() = default;
    Counted(double x) : v(x) {}  // NOLINT: implicit, so that S(1) and literals work
    explicit operator double() const { return v; }

    friend Counted operator+(Counted a, Counted b) { ++OpCounter::get().add; return a.v + b.v; }
    friend Counted operator-(Counted a, Counted b) { ++OpCounter::get().add; return a.v - b.v; }
    friend Counted operator*(Counted a, Counted b) { ++OpCounter::get().mul; return a.v * b.v; }
    friend Counted operator/(Counted a, Counted b) { ++OpCounter::get().div; return a.v / b.v; }
    friend Counted operator-(Counted a) { return -a.v; }
    Counted& operator+=(Counted b) { return *this = *this + b; }
    Counted& operator-=(Counted b) { return *this = *this - b; }
    Counted& operator*=(Counted b) { return *this = *this * b; }
    Counted& operator/=(Counted b) { return *this = *this / b; }
    friend bool operator<(Counted a, Counted b) { return a.v < b.v; }
    friend bool operator>(Counted a, Counted b) { return a.v > b.v; }
    friend bool operator<=(Counted a, Counted b) { return a.v <= b.v; }
    friend bool operator>=(Counted a, Counted b) { return a.v >= b.v; }
    friend bool operator==(Counted a, Counted b) { return a.v == b.v; }
    friend bool operator!=(Counted a, Counted b) { return a.v != b.v; }
    friend Counted sqrt(Counted a) { ++OpCounter::get().sqrt; return std::sqrt(a.v); }
    friend Counted sin(Counted a) { ++OpCounter::get().sin; return std::sin(a.v); }
    friend Counted cos(Counted a) { ++OpCounter::get().cos; return std::cos(a.v); }
    friend Counted abs(Counted a) { return std::fabs(a.v); }
};

/// Value of a scalar as double (identity for double and float).
inline double to_double(double x) { return x; }
inline double to_double(float x) { return x; }
inline double to_double(const Counted& x) { return x.v; }

}  // namespace nelu
