// printer.hpp: the solver's program printed as C++ functions, in one of three forms. The walk over
// the statements (parts, phase dividers, pivot tests, the outputs) is written once, in
// Form::functions; each form says how a value is declared, stored and read, how an operation and a
// pivot test are printed, and what opens and closes its functions:
//   ScalarForm     values in locals, and in the NAME_work struct when they cross parts (with
//                  Layout::work_in_caller its parts run from NAME_run, which NAME_impl calls on a
//                  struct of its own and NAME_ws_impl on the caller's memory: caller_work_impl);
//   WorkspaceForm  every value in the caller's array w (NAME_ws: a stack that holds no values);
//   LaneForm       the scalar form over nelu::lanes::Vec<T>, W independent evaluations at once
//                  (runtime lanes.hpp), every lane run to its end with its own status.
// Which form prints a function is the caller's choice, function by function: a file holds the
// forms it is given (and includes what they need).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emit.hpp"
#include "layout.hpp"

namespace nelu::emit {

/// v with every digit a double has (17 significant).
std::string number(double v);

/// Comments on nodes that have a meaning (solution entries, pivots, velocities, sincos).
using Notes = std::map<ir::Id, std::string>;

/// How one form prints the program of one entry point (its Layout).

class Form {
public:
    Form(const Layout& L, const EmitInput& in, const Notes& notes);
    virtual ~Form() = default;
    Form(const Form&) = delete;
    Form& operator=(const Form&) = delete;

    /// The functions of the entry point in this form: its parts and the NAME..._impl that the
    /// extern "C" entry points call.
    std::string functions();
    /// Headers the functions need ("<cmath>", "nelu/trig.hpp").
    virtual std::vector<std::string> includes() const = 0;
    const Layout& layout() const { return L; }

protected:
    // --- values
    /// Where value x lives, as the statements that read it name it.
    virtual std::string name(ir::Id x) const;
    /// The left-hand side of the statement that computes x.
    virtual std::string declare(ir::Id x) const;
    /// The type of a value in locals.
    virtual const char* value_type() const = 0;
    /// Node x read by a statement: a constant, an input, or name(x).
    std::string operand(ir::Id x) const;
    /// Whether the statements name the values of Layout::staged as elements of the work struct's
    /// array `kept` (the forms that keep values in NAME_work, in parts).
    virtual bool staged_names() const { return !L.staged.empty(); }
    /// Whether value x is named so.
    bool staged(ir::Id x) const;
    /// x written in place into the lanes of out or jac (a batch form in parts: Layout::place).
    bool placed(ir::Id x) const;
    /// xs without the values named so.
    std::vector<ir::Id> unstaged(const std::vector<ir::Id>& xs) const;
    /// How many of xs[k], xs[k + 1], ... are consecutive elements of `kept` from xs[k]'s on,
    /// stopping before an entry e where skip(e): 0 when xs[k] is not staged.
    std::size_t staged_run(const std::vector<ir::Id>& xs, std::size_t k,
                           const std::function<bool(std::size_t)>& skip = [](std::size_t) { return false; }) const;
    /// Node x as an output of its own.
    virtual std::string output(ir::Id x) const { return operand(x); }
    /// The namespace of sin, cos and sqrt.
    virtual const char* math() const = 0;
    /// The namespace of the runtime's own functions (the rotation-log functions of trig.hpp, or
    /// their lane overloads in lanes.hpp).
    virtual const char* runtime_math() const = 0;

    // --- statements
    /// The statement at position k of the layout (with its comment).
    virtual std::string statement(std::size_t k) const;
    /// `declare(x) = rhs;`, with x's note as a comment.
    std::string assign(ir::Id x, const std::string& rhs) const;
    /// The test a pivot passes (scalar forms) or fails (lanes), pv being the value of node x.
    virtual std::string pivot_test(ir::Id x, const ScheduledPivot& pv) const = 0;
    /// What the function does with a pivot test.
    virtual std::string on_pivot_test(const std::string& test) const = 0;
    /// Whether statement k waits (it is printed later by flush); false in the scalar forms.
    virtual bool defer(std::size_t) { return false; }
    /// The waiting statements that `reader` reads, printed before it ("" when none).
    virtual std::string flush_for(const ir::Node&) { return ""; }
    /// Every waiting statement (at the end of a part).
    virtual std::string flush() { return ""; }
    /// What precedes the k-th statement of a part.
    virtual std::string before(std::size_t) const { return ""; }

    // --- functions
    /// Parts that report a status, and an impl that calls them (else one function does it all).
    virtual bool split() const { return L.parts > 1; }
    virtual std::string open_whole() const = 0;        ///< the one function, through its prologue
    virtual std::string open_part(std::size_t p) const = 0;
    virtual std::string close_part() const = 0;
    virtual std::string open_caller() const = 0;       ///< the impl that calls the parts, through its prologue
    virtual std::string close_caller() const { return ""; }  ///< what follows the impl that calls the parts
    /// What precedes the return type of a part (and of a lane block's function).
    std::string part_attributes() const { return L.work_in_caller ? "NELU_PART " : ""; }
    virtual std::string call_part(std::size_t p) const = 0;

    // --- outputs
    /// The finiteness check of `values` (each value the outputs read, once).
    virtual std::string finite_check(const std::vector<ir::Id>& values) const = 0;
    /// The return after the outputs are written.
    virtual std::string give_status() const = 0;
    /// The finiteness check (never a silent NaN), the writes of out (and jac), and the return.
    std::string outputs() const;
    /// The writes of array[k] = xs[k] but where skip(k): runs of staged values one memcpy each,
    /// runs of one constant a loop, the rest an assignment each.
    std::string writes(const char* array, const std::vector<ir::Id>& xs, const std::function<bool(std::size_t)>& skip) const;
    /// A block of lane groups (Layout::lanes): their right-hand sides' rows in an array of the
    /// block's lanes, the kernel in a loop over them, a vector of the target's lanes a pass
    /// (nelu::lanes::Block), their entries of jac written; `ok` cleared when one is not finite.
    std::string lane_block(const std::vector<std::size_t>& groups, const char* indent) const;
    /// The type of the call's table of the kernels' broadcast operands (Layout::splats).
    std::string splats_type() const { return "nelu::lanes::Splats<T, " + std::to_string(L.splats.size()) + ">"; }

    // --- windows into the work struct
    /// A part reads and writes the elements of the NAME_work struct's arrays (`t` and `kept`,
    /// Layout::member and Layout::stage) through kWindow wide windows, pointers into them that the
    /// compiler cannot fold back into the struct's address (nelu::window, trig.hpp). An element
    /// of a window is then a one-byte displacement from a register, where a struct of thousands
    /// of values needs four bytes at every use: the floating humanoid's fd derivatives (g++ 12
    /// -O2 generic) have 15 % less code in their parts and 11 % fewer L1 instruction misses
    /// (cachegrind), their instructions the same. Each part takes the kWindows windows with the
    /// most uses (at least kWindowUses) of a greedy cover of the elements it names; the others
    /// stay `w.t[e]`. Only the forms that print without side effects use them (windowed()): the
    /// elements a part names are counted by printing it once without windows.
    struct Window {
        int array = 0;  ///< 0: `t`, 1: `kept`
        int first = 0;  ///< its first element
    };
    /// Elements a window spans: 32 doubles lie within a signed byte of the window's middle.
    static constexpr int kWindow = 32;
    /// Windows a part holds at most: registers that straight-line floating-point code leaves free
    /// (x86-64, 32-bit Arm; on AArch64 nelu::window lets the compiler fold them away).
    static constexpr std::size_t kWindows = 8;
    /// Uses for which a window pays its pointer.
    static constexpr int kWindowUses = 3;
    /// Whether this form's parts use windows.
    virtual bool windowed() const { return false; }
    /// Statements of part p (with the phase dividers, pivot tests and what flush prints), the
    /// divider printed last in `phase`.
    std::string statements(std::size_t p, const char*& phase);
    /// The windows of part p (into `windows`).
    void choose_windows(std::size_t p, const char* phase);
    /// Element e of the work struct's array `t` (array 0) or `kept` (array 1), through a window
    /// where one holds it.
    std::string work_element(int array, int e) const;
    /// The element a window's pointer points to (its middle, or the array's end).
    int window_base(const Window& w) const;
    /// The declarations of the current part's window pointers, `w0`, `w1`, ...
    std::string window_pointers() const;
    std::vector<Window> windows;  ///< the current part's
    mutable std::map<std::pair<int, int>, int>* tally = nullptr;  ///< while choosing: the uses of each element
    /// The work struct's name where its elements are spelled: `w`, but `ws` outside the loop of a
    /// lane block's function, whose parameter it is (inside, `w` is the struct behind an opaque
    /// pointer: the parameter's own name would be shadowed, which -Wshadow reports).
    mutable const char* work = "w";

    const Layout& L;
    const Factorization& f;
    const ir::Program& P;
    const Notes& notes;
    std::vector<int> q_arg, v_arg;  ///< full-model q and qd slot -> argument index (mimic joints left out)
};

/// Values in locals (`const T tX`), and in NAME_work when they cross parts; a failed pivot returns
/// at once from one function, or is reported by its part at the part's end.
class ScalarForm : public Form {
public:
    using Form::Form;
    std::vector<std::string> includes() const override {
        std::vector<std::string> h = {"<cmath>", "nelu/trig.hpp"};
        if (L.lanes || !L.staged.empty()) h.push_back("<cstring>");
        if (L.lanes) h.push_back("nelu/lanes.hpp");
        if (!L.staged.empty()) h.push_back("nelu/outputs.hpp");
        if (L.work_in_caller) h.push_back("<new>");
        return h;
    }

protected:
    const char* value_type() const override { return "T"; }
    const char* math() const override { return "std::"; }
    const char* runtime_math() const override { return "nelu::"; }
    bool windowed() const override { return true; }
    std::string statement(std::size_t k) const override;
    std::string pivot_test(ir::Id x, const ScheduledPivot& pv) const override;
    std::string on_pivot_test(const std::string& test) const override;
    std::string open_whole() const override;
    std::string open_part(std::size_t p) const override;
    std::string close_part() const override;
    std::string open_caller() const override;
    std::string close_caller() const override;
    std::string call_part(std::size_t p) const override;
    std::string finite_check(const std::vector<ir::Id>& values) const override;
    std::string give_status() const override;
    /// The functions' base name (N, N_ws), the parts' work parameter, and what the impl adds to
    /// its parameters and declares to hold the work.
    virtual std::string function() const { return L.fn; }
    virtual std::string work_parameter() const { return L.fn + "_work<T>& w"; }
    virtual std::string caller_parameter() const { return ""; }
    virtual std::string caller_work() const;
};

/// Every value in the caller's array w (w[slot], slots reused once dead), always in parts; the
/// pointer is reloaded through a volatile every kWorkspaceChunk statements so that no value stays
/// in a register or a spill slot.
class WorkspaceForm : public ScalarForm {
public:
    using ScalarForm::ScalarForm;

protected:
    std::string name(ir::Id x) const override;
    std::string declare(ir::Id x) const override { return name(x); }
    bool staged_names() const override { return false; }
    bool windowed() const override { return false; }
    std::string before(std::size_t k) const override;
    bool split() const override { return true; }
    std::string open_part(std::size_t p) const override;
    std::string function() const override { return L.fn + "_ws"; }
    std::string work_parameter() const override { return "T* w"; }
    std::string caller_parameter() const override { return ", T* w"; }
    std::string caller_work() const override { return ""; }
};

/// The scalar form over lanes: values `const V tX` (V = nelu::lanes::Vec<T>), constants broadcast,
/// sines and cosines of a part deferred and computed in one nelu::lanes::sincos, a lane mask `bad`
/// of failed pivots; NAME_lanes_impl runs every lane to its end and returns each lane's status.
class LaneForm : public Form {
public:
    using Form::Form;
    std::vector<std::string> includes() const override {
        std::vector<std::string> h = {"<cmath>", "nelu/lanes.hpp", "nelu/trig.hpp"};
        if (!L.staged.empty()) h.push_back("<cstring>");
        return h;
    }

protected:
    std::string output(ir::Id x) const override;
    const char* value_type() const override { return "V"; }
    const char* math() const override { return "nelu::lanes::"; }
    const char* runtime_math() const override { return "nelu::lanes::"; }
    std::string pivot_test(ir::Id x, const ScheduledPivot& pv) const override;
    std::string on_pivot_test(const std::string& test) const override { return "    bad |= " + test + ";\n"; }
    bool defer(std::size_t k) override;
    std::string flush_for(const ir::Node& reader) override;
    std::string flush() override;
    std::string open_whole() const override;
    std::string open_part(std::size_t p) const override;
    std::string close_part() const override { return "}\n\n"; }
    std::string open_caller() const override;
    std::string call_part(std::size_t p) const override;
    std::string finite_check(const std::vector<ir::Id>& values) const override;
    std::string give_status() const override { return "    return nelu::lanes::status(bad, fin);\n"; }

private:
    std::vector<std::size_t> deferred_;  ///< positions of the first of each waiting sine-cosine pair
};

/// The NAME_work struct of an entry point in several parts, for every form that keeps values in it
/// (none for one function).
std::string work_struct(const Layout& L);
/// With Layout::work_in_caller: NAME_ws_impl, which places the NAME_work struct in the caller's
/// memory and runs NAME_run (the ordinary form's parts) on it.
std::string caller_work_impl(const Layout& L);

/// The #include lines for `forms`: system headers, then nelu's, each sorted and once.
std::string include_lines(const std::vector<std::unique_ptr<Form>>& forms);

/// The functions of `forms` in order, each entry point's work struct before its first form.
std::string program_text(const std::vector<std::unique_ptr<Form>>& forms);

}  // namespace nelu::emit
