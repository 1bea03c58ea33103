// layout.hpp: where the values of an emitted solver live and what that costs in stack. The
// statements in emission order, their split into functions, the values that cross a function
// boundary, a workspace slot per value (register allocation by a linear scan over liveness), and
// the stack estimate that decides whether the workspace form is emitted. Decided once per entry
// point, read by the printer, the header and the manifest alike.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emit.hpp"
#include "ir.hpp"
#include "schedule.hpp"

namespace nelu::emit {

/// Statements per generated function. A solver of at most kOneFunction statements is one function;
/// a bigger one is split into parts of kStatementsPerPart, which the C++ compiler optimizes in less
/// time (its cost grows faster than linearly in a function's size), and the values that cross a part
/// boundary live in a stack workspace. Measured (g++ 12 -O2, docs/large-robots.md "Part size"):
/// parts of 500 instead of 2000 build the iCub's floating FD in 9.4-9.7 s of CPU instead of
/// 11.4-14.3 and the 100-link tree's FD in 63 s instead of 76, with instructions per call within
/// +-2 % (the floating humanoid_winter ID -5 %, and back under the 32 KiB L1i); splitting a solver
/// of 600-1800 statements costs it 2-3 % more instructions (the UR5e's, Panda's and Mini Cheetah's
/// ID) and saves no build time, so those stay whole. Parts of 250 instead of 500: within a part
/// g++ keeps the values it reads from the work struct in registers from their first reader to
/// their last and, where the contact solvers' factorizations read many of them, spills them to its
/// own stack (store and load) rather than load them again; a shorter part bounds those live ranges.
/// The contact value solvers execute 2.4-7.8 % fewer instructions (the Mini Cheetah's impulse
/// 13,853 -> 12,766, 13 % less time), the others within +-2 % (docs/large-robots.md).
constexpr std::size_t kOneFunction = 2000;
constexpr std::size_t kStatementsPerPart = 250;

/// The stack estimate doubles the values it counts: a compiler's instruction scheduling lengthens
/// live ranges beyond the emitted order, so its spill slots outnumber the values live at once. The
/// worst ratio measured (GCC 12 -O2, Cortex-M7 and aarch64, the shipped robots: docs/firmware.md)
/// was 1.5, for solvers in several parts; 2 leaves a margin.
constexpr long kSpillFactor = 2;

/// At most this many Jacobian columns in one lane block (lane_blocks): two groups
/// of four, a full AVX-512 register of doubles, two of AVX2, four of SSE2 or NEON.
constexpr long kLaneBlockColumns = 8;

/// Bytes the stack estimate adds to the values it counts, for what it does not model: registers
/// saved by the entry point and the parts, their call frames, and the sine and cosine of the math
/// library (measured: 0 to 100 bytes beyond the solvers' own frames, docs/firmware.md).
constexpr long kStackAllowance = 512;

/// Where the values of one entry point live and what that costs in stack.
struct Layout {
    /// The entry point: the value solver NAME (outputs `out`), or with --derivatives
    /// NAME_derivatives (outputs `out` and their Jacobian `jac`). One emitter serves both.
    std::string fn;
    std::vector<ir::Id> out, jac;
    /// out, then jac: every value the entry point writes.
    std::vector<ir::Id> written() const;
    /// NAME_derivatives with the Jacobian's columns in lanes (Factorization::lane_groups): the
    /// variant for targets with vector lanes. Its lane blocks, after the program, write the entries
    /// of `jac` marked in jac_in_lanes from the kernels, reading lane_reads (the groups' right-hand
    /// sides and extras, the scalar values the kernels read); the program computes the rest.
    bool lanes = false;
    std::vector<bool> jac_in_lanes;
    std::vector<ir::Id> lane_reads;
    std::vector<bool> lane_dep;                 ///< lane_dependent(program), for the printer
    std::vector<KernelProgram> lane_programs;   ///< per kernel, its reading (kernel_program; empty if no group uses it)
    /// With lanes: the kernels' scalar operands (not constants), each once, in the order of their
    /// first reader (blocks in lane_blocks' order, each kernel's statements in order): the entries
    /// of the call's nelu::lanes::Splats table, which the targets without AVX fill with broadcasts
    /// once a call (nelu/lanes.hpp), and their places in it.
    std::vector<ir::Id> splats;
    std::map<ir::Id, int> splat_of;
    /// The table's bytes, whatever the target (16 per entry and 16 to align them; 0 without lanes).
    long splat_bytes() const { return lanes ? 16 * (static_cast<long>(splats.size()) + 1) : 0; }
    /// What the program must leave for the end of the entry point: out, the entries of jac not in
    /// lanes, and lane_reads.
    std::vector<ir::Id> kept() const;
    std::vector<ir::Id> stmts;  ///< statements in emission order (sines and cosines first)
    std::map<ir::Id, std::vector<const ScheduledPivot*>> checks;  ///< pivot tests after a statement (a node can be the pivot of several steps)
    std::size_t parts = 1;
    std::size_t per_part = 1;  ///< statements per function (the last part may have fewer)
    std::vector<bool> shared;  ///< ordinary form: node -> in the NAME_work struct (read in a later part, or an output)
    /// In parts: what the entry point reads at its end (kept(): the outputs, and with lanes the
    /// kernels' scalar reads), each computed value once, in that order, as one array of the
    /// NAME_work struct (`kept`) instead of members of their own, so that the entry point tests
    /// them for finiteness in one loop and writes out and jac in runs of copies: straight-line code
    /// per entry had been 7 % of the floating iCub's fd derivative code (docs/large-robots.md,
    /// "Outputs in one array"). stage[x] is x's index in it, -1 for a value not in it.
    std::vector<ir::Id> staged;
    std::vector<int> stage;
    /// In parts: the other values in the NAME_work struct, each an element of its array `t`, in
    /// the order of the statements that compute them (so that a part's own values are neighbours):
    /// member[x] is x's element, -1 for a value not there. One array rather than a member each, so
    /// that a part can read and write the elements it uses most through pointers into them (a
    /// one-byte displacement instead of four: printer.cpp, Form::windows).
    std::vector<int> member;
    int members = 0;  ///< the elements of `t`
    /// With lanes: the right-hand sides that the lane blocks read, block by block, row by row,
    /// column by column: staged in this order after the kernels' operands, so that a row of a
    /// block is consecutive elements of `kept` where its values are not constants or staged before
    /// (the kernel then loads it from there: Form::lane_block).
    std::vector<ir::Id> lane_rhs;
    /// Batch forms (batch_memory): node -> its element of the NAME_work struct's array `v`, reused
    /// once the value is dead (-1: not there; empty: every value a member of its own, `t<id>`).
    std::vector<int> work_slot;
    int work_slots = 0;  ///< the elements of `v`: the most such values live at once
    /// Batch forms in parts (batch_memory): node -> its entry of `out` (0 .. NOUT - 1), then of `jac`
    /// (NOUT + e), which the parts write in place, the first it fills (-1: none; empty: the
    /// outputs are staged in `kept` and copied at the end).
    std::vector<int> place;
    std::vector<int> slot;     ///< workspace form: node -> its element of the caller's array (reused once the value is dead)
    int slots = 0;             ///< elements of that array: the most values live at once
    std::set<ir::Id> sincos_first;  ///< the first of a sine and cosine of one angle that follow each other in one part: one nelu::sincos
    long work_values = 0;      ///< ordinary form: values in the NAME_work struct (0 for one function)
    long values = 0;           ///< ordinary form: values on the stack at once (the work struct, plus the most locals live in each part)
    /// Ordinary form: the largest part's frame in values, kSpillFactor times its most locals live
    /// at once plus the values it reads from the work struct and the arguments (a compiler may load
    /// those early and spill them). Measured (g++ 12 -O2 -fstack-usage, the humanoid's two soles
    /// with derivatives, 88 parts): every frame within 0.56 of this estimate's values.
    long part_values = 0;
    /// With lanes, per lane block (lane_blocks): its columns, its kernel's values and
    /// right-hand-side rows live at once (vectors of the block's columns), and the scalars it reads.
    struct LaneBlockCost {
        long columns = 0, live = 0, reads = 0;
        long arrays = 0;  ///< rows of its right-hand sides and results (printer.cpp Form::lane_block)
    };
    std::vector<LaneBlockCost> lane_block_costs;
    bool workspace = false;    ///< the estimate exceeds the budget: the _ws entry points are emitted too
    /// The workspace form runs the ordinary form's parts on the caller's memory: NAME_ws_impl
    /// places the NAME_work struct there and calls the same NAME_run as NAME_impl, so each value
    /// crossing parts lives in `work` and the stack holds one part's frame at a time (the parts
    /// are out of line, NELU_PART). Chosen when the entry point is in parts and that frame
    /// (frame(), and every lane block's with lanes) is within the budget; otherwise every value
    /// lives in the caller's array (slot), a program of its own. The shared form adds no code:
    /// the C++ compiler builds one program for both entry points.
    bool work_in_caller = false;
    long caller_work_values = 0;  ///< with work_in_caller: the NAME_work struct's values (the larger of the lane and scalar variants')
    long caller_frame = 0;        ///< with work_in_caller: the largest frame estimate of the functions it calls (bytes, the widest scalar)
    long caller_splat_bytes = 0;  ///< with work_in_caller: the lane variant's splat_bytes (in its NAME_work struct)
    /// Conservative stack estimate of the ordinary form for a scalar of `size` bytes.
    long stack(long size) const { return kSpillFactor * values * size + splat_bytes() + kStackAllowance; }
    /// Conservative estimate of the largest part's frame, for a scalar of `size` bytes.
    long frame(long size) const { return part_values * size + kStackAllowance; }
    /// Conservative estimate of the largest lane block's frame (0 without lanes): its arrays of
    /// right-hand sides and results and its live vectors, each row or vector counted as wide as the
    /// block's lanes (nelu::lanes::Block: its columns rounded up to a power of two and to 16 bytes;
    /// the kernel's vectors are that wide or narrower), plus its scalar reads. No spill factor on
    /// the vectors: the largest loop frame measured 42 % (the Mini Cheetah's point feet) and 58 %
    /// (the humanoid's soles) of the largest estimate (g++ 12 -O2 -fstack-usage; generic, x86-64-v3
    /// and v4), where the straight-line form's kernel kept every row live from its start.
    long lane_block_frame(long size) const;
    /// The workspace form's bytes for a scalar of `size` bytes.
    long work_bytes(long size) const { return work_in_caller ? caller_work_values * size + caller_splat_bytes : slots * size; }
    /// Statements [first, end) of part p.
    std::size_t part_begin(std::size_t p) const { return p * per_part; }
    std::size_t part_end(std::size_t p) const;
    /// Whether statement k is the second of a sine-cosine pair (sincos_first holds the first).
    bool pairs_with_previous(std::size_t k) const { return k > 0 && sincos_first.count(stmts[k - 1]) > 0; }
};

/// The order of a layout's statements (sines and cosines first in either).
/// - program: the program's own, the order in which the builders wrote the statements (the
///   solver's steps one after the other: transforms, velocities, the factorization, the solves).
/// - depth_first: each root (output, Jacobian entry, pivot, value read by the lanes), in program
///   order, after the statements it needs that are not placed yet, operands first: a value is
///   computed next to its first use, and dies sooner. It halves the values live at once in the
///   contact value solvers (the Mini Cheetah on four point feet: 2,801 -> 1,416) and lowers them in
///   the derivative solvers (10,078 -> 7,816). That is what the batch forms need, whose values are
///   W lanes wide and live in memory: the same solver's AVX2 batch form (50 states) took 90 % fewer
///   L1 data misses and 12.5 % fewer instructions per state (cachegrind) and ran 1.25-1.45x faster
///   (four fresh copies each). Scalar entry points, g++ -O2 (docs/derivatives.md, "Emission"): the
///   derivative solvers execute 2.7-5.3 % fewer instructions; the contact value solvers, whose live
///   values it halves, 10-11 % fewer; the floating robots' fd value solvers, where it leaves the
///   live values as they are, 4-8 % more (the floating Mini Cheetah's: 7,983 -> 8,611 per call).
///   docs/batch.md, "Statement order".
enum class Order { program, depth_first };

/// The layout of entry point `fn`, which writes the factorization's outputs and `jac` (empty for
/// the value solver): statements ordered, split into parts, values allocated, stack estimated
/// against in.max_stack.
Layout plan_layout(const EmitInput& in, const std::string& fn, const std::vector<ir::Id>& jac, bool lanes = false,
                   Order order = Order::program);

/// The batch forms' memory: the values of L's NAME_work struct (those that cross parts, outputs
/// aside) share its elements: each takes the lowest element free at its statement, and frees it at
/// its last reader (a sine's or cosine's operand never: the lane form defers those statements).
/// The batch forms' values are W lanes wide, so the struct of one member per value outgrew the L1
/// data cache (the Mini Cheetah's point-feet derivatives: 4,920 vectors of 32 bytes with AVX2), of
/// which at most 1,171 are live at once (docs/batch.md, "Work struct"). And each output is written
/// in place, into the lanes of `out` or `jac` (place), instead of an array `kept` copied at the
/// end. The scalar entry points keep one member each, and `kept`.
void batch_memory(Layout& L, const ir::Program& P);

/// NAME_derivatives with its columns in lanes, when the factorization has lane groups.
bool has_lanes(const EmitInput& in);

/// The lane groups printed together, each block a function of the printed solver: the groups of
/// one kernel, in order, up to kLaneBlockColumns columns a block (one kernel over a vector of all
/// of their columns, so that each scalar operand is broadcast once for them all).
std::vector<std::vector<std::size_t>> lane_blocks(const Factorization& f);

/// The layouts of a compile, each entry point's planned once: NAME, and NAME_derivatives when the
/// factorization has a Jacobian.
struct Layouts {
    /// The scalar entry points: NAME in the program's order unless depth first lowers its values
    /// live at once by a quarter or more, NAME_derivatives depth first (Order).
    std::vector<Layout> scalar;
    /// With --batch, their batch forms: both depth first (Order); empty without.
    std::vector<Layout> batch;
    /// NAME_derivatives with its columns in lanes (has_lanes): the variant for targets with vector
    /// lanes, in place of scalar[1]'s program there.
    std::optional<Layout> lanes;
};
Layouts plan_layouts(const EmitInput& in);

/// A batch entry point (--batch): NAME_batch for NAME, NAME_f_batch for NAME_f, ...
struct BatchEntry {
    std::string name, of;
    const char* scalar;
    const Layout* layout;
    long scalar_size() const;
    std::string declaration() const;
};

std::vector<BatchEntry> batch_entries(const EmitInput& in, const std::vector<Layout>& layouts);

/// Stack bytes per lane of a batch entry point, for a scalar of `size` bytes: the lane program's
/// values (the ordinary form's estimate) and the lanes of the arguments it reads and writes.
long batch_lane_bytes(const EmitInput& in, const Layout& L, long size);

}  // namespace nelu::emit
