// sym.hpp: a scalar type that builds IR, so that the runtime's spatial algebra (nelu/spatial.hpp,
// templated on the scalar) writes programs: SVec<Sym>, Inertia<Sym> and Xform<Sym> computed with
// the same functions the reference algorithms use, each operation appended to a Program folded and
// hash-consed (ir.hpp), so that structural zeros and ones of the model cost nothing.
//
// A Sym is a node of a program, or a constant that belongs to no program yet (the S(0), S(1) of
// the templates); an operation with a node puts the constant into the node's program. Constants
// combine as the program combines them (ir::folded_sum), so a result does not depend on which
// operand carried the program.
#pragma once

#include "ir.hpp"

namespace nelu::ir {

class Sym {
  public:
    Sym() = default;
    Sym(double v) : value_(v) {}  // NOLINT: implicit, as the templates' S(0) and S(1) need
    Sym(Program& P, Id x) : P_(&P), id_(x) {}

    /// The node in P (a constant is added to P when it has none).
    Id id(Program& P) const { return P_ ? id_ : P.constant(value_); }
    Program* program() const { return P_; }
    bool is_constant() const { return !P_ || P_->is_const(id_); }
    double constant() const { return P_ ? P_->value(id_) : value_; }

    friend Sym operator+(const Sym& a, const Sym& b) { return a.binary(b, &Program::add, folded_sum(a.value_, b.value_)); }
    friend Sym operator-(const Sym& a, const Sym& b) { return a.binary(b, &Program::sub, folded_sum(a.value_, -b.value_)); }
    friend Sym operator*(const Sym& a, const Sym& b) { return a.binary(b, &Program::mul, a.value_ * b.value_); }
    friend Sym operator/(const Sym& a, const Sym& b) { return a.binary(b, &Program::div, a.value_ / b.value_); }
    friend Sym operator-(const Sym& a) { return a.P_ ? Sym(*a.P_, a.P_->neg(a.id_)) : Sym(-a.value_); }

  private:
    /// `op` in the program of either operand; `folded` when neither has one.
    Sym binary(const Sym& b, Id (Program::*op)(Id, Id), double folded) const {
        Program* P = P_ ? P_ : b.P_;
        if (!P) return Sym(folded == 0 ? 0.0 : folded);
        return Sym(*P, (P->*op)(id(*P), b.id(*P)));
    }
    Program* P_ = nullptr;
    Id id_ = -1;
    double value_ = 0;
};

}  // namespace nelu::ir
