// spy.cpp: see spy.hpp.
#include "spy.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "io.hpp"

namespace nelu {
namespace {

// Layout (pixels): three square panels side by side under a two-line title, a caption under each.
constexpr double kPanel = 300, kGap = 56, kLeft = 28, kRight = 28, kTop = 70, kBottom = 50;
constexpr int kSmallMax = 600;   // up to this n every nonzero is drawn
constexpr int kGridMax = 200;    // beyond it, at most kGridMax x kGridMax density cells per panel
constexpr int kDensityLevels = 6;
constexpr int kMaxBodies = 16;             // body boundary lines only for at most this many bodies
constexpr std::size_t kMaxBodyLines = 48;  // and along an axis with at most this many boundaries
const char* const kEntryColour = "#1f3b73";
const char* const kFillColour = "#d62728";
const char* const kBodyLineColour = "#d9d9d9";
const char* const kFont = "Helvetica, Arial, sans-serif";

/// One nonzero of a panel: position (row, column) in the panel's order, and whether it is fill.
struct Entry {
    int i, j;
    bool fill;
    bool operator<(const Entry& o) const { return std::tie(i, j, fill) < std::tie(o.i, o.j, o.fill); }
};

/// Structural LU of the row pattern `A` under `order` (no cancellation): per pivot k, the rows of
/// L's column k and the columns of U's row k (pivot included), as original indices.
void symbolic_lu(std::vector<std::set<int>> A, const std::vector<Pivot>& order, std::vector<std::vector<int>>& L,
                 std::vector<std::vector<int>>& U) {
    const int n = static_cast<int>(A.size());
    std::vector<std::set<int>> col_rows(n);
    for (int r = 0; r < n; ++r)
        for (int c : A[r]) col_rows[c].insert(r);
    L.assign(order.size(), {}), U.assign(order.size(), {});
    for (std::size_t k = 0; k < order.size(); ++k) {
        const auto [r, c] = order[k];
        if (!A[r].count(c)) throw std::invalid_argument(fmt::format("spy: pivot {} ({}, {}) is structurally zero", k, r, c));
        U[k].assign(A[r].begin(), A[r].end());
        for (int j : A[r]) col_rows[j].erase(r);
        for (int i : col_rows[c]) {
            L[k].push_back(i);
            A[i].erase(c);
            for (int j : U[k])
                if (j != c && A[i].insert(j).second) col_rows[j].insert(i);
        }
        col_rows[c].clear();
        A[r].clear();
    }
}

/// Positions (in 0..n) where the body changes along an axis: `body[k]` is the body at position k.
std::vector<int> body_boundaries(const std::vector<int>& body) {
    std::vector<int> b;
    for (std::size_t k = 1; k < body.size(); ++k)
        if (body[k] != body[k - 1]) b.push_back(static_cast<int>(k));
    return b;
}

class Figure {
  public:
    Figure(int n, int bodies) : n_(n), bodies_(bodies) {}
    std::string out;

    double panel_x(int p) const { return kLeft + p * (kPanel + kGap); }

    /// Panel p: background, body lines (`row_bounds`, `col_bounds` in positions), entries, frame.
    void panel(int p, const std::string& id, std::vector<Entry> entries, const std::vector<int>& row_bounds,
               const std::vector<int>& col_bounds) {
        const double x0 = panel_x(p), y0 = kTop;
        std::sort(entries.begin(), entries.end());
        fmt::format_to(std::back_inserter(out), "<g id=\"{}\">\n", id);
        fmt::format_to(std::back_inserter(out), "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"#ffffff\"/>\n",
                       x0, y0, kPanel, kPanel);
        if (bodies_ <= kMaxBodies && n_ > 0) {
            std::string d;
            if (col_bounds.size() <= kMaxBodyLines)
                for (int b : col_bounds) fmt::format_to(std::back_inserter(d), "M{:.2f} {:.2f}v{:.2f}", x0 + kPanel * b / n_, y0, kPanel);
            if (row_bounds.size() <= kMaxBodyLines)
                for (int b : row_bounds) fmt::format_to(std::back_inserter(d), "M{:.2f} {:.2f}h{:.2f}", x0, y0 + kPanel * b / n_, kPanel);
            if (!d.empty())
                fmt::format_to(std::back_inserter(out), "<path d=\"{}\" stroke=\"{}\" stroke-width=\"0.6\" fill=\"none\"/>\n", d,
                               kBodyLineColour);
        }
        if (n_ <= kSmallMax) squares(id, entries, x0, y0);
        else grid(entries, x0, y0);
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"none\" stroke=\"#404040\" stroke-width=\"0.8\"/>\n",
                       x0, y0, kPanel, kPanel);
        out += "</g>\n";
    }

    void text(double x, double y, const std::string& size, const std::string& anchor, const std::string& body,
              const std::string& extra = "") {
        fmt::format_to(std::back_inserter(out), "<text x=\"{:.2f}\" y=\"{:.2f}\" font-size=\"{}\" text-anchor=\"{}\"{}>{}</text>\n", x, y,
                       size, anchor, extra, body);
    }

  private:
    int n_, bodies_;

    /// Every entry a square in a 10-unit cell, inset when the cells are big enough to show gaps.
    void squares(const std::string& id, const std::vector<Entry>& entries, double x0, double y0) {
        const double scale = kPanel / (10.0 * std::max(n_, 1));
        const bool inset = kPanel / std::max(n_, 1) >= 3;
        const int off = inset ? 1 : 0, side = inset ? 8 : 10;
        for (int cls = 0; cls < 2; ++cls) {
            if (cls == 1 && id != "LU") continue;
            fmt::format_to(std::back_inserter(out), "<g id=\"{}-{}\" fill=\"{}\" transform=\"translate({:.2f},{:.2f}) scale({:.6f})\">\n", id,
                           cls ? "fill" : "nz", cls ? kFillColour : kEntryColour, x0, y0, scale);
            for (const Entry& e : entries)
                if (e.fill == (cls == 1))
                    fmt::format_to(std::back_inserter(out), "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", 10 * e.j + off,
                                   10 * e.i + off, side, side);
            out += "</g>\n";
        }
    }

    /// Density cells: opacity by the share of nonzeros in the cell (cube root scale, a few
    /// levels), colour by the majority (entries of P D Q or fill).
    void grid(const std::vector<Entry>& entries, double x0, double y0) {
        const int bin = (n_ + kGridMax - 1) / kGridMax, g = (n_ + bin - 1) / bin;
        std::vector<long> cnt(static_cast<std::size_t>(g) * g, 0), fill(cnt.size(), 0);
        for (const Entry& e : entries) {
            std::size_t c = static_cast<std::size_t>(e.i / bin) * g + e.j / bin;
            ++cnt[c];
            if (e.fill) ++fill[c];
        }
        auto extent = [&](int b) { return std::min(bin, n_ - b * bin); };
        std::vector<std::string> d(2 * kDensityLevels);  // (colour, level) -> path data
        for (int ci = 0; ci < g; ++ci)
            for (int cj = 0; cj < g; ++cj) {
                std::size_t c = static_cast<std::size_t>(ci) * g + cj;
                if (cnt[c] == 0) continue;
                double density = static_cast<double>(cnt[c]) / (static_cast<double>(extent(ci)) * extent(cj));
                int level = std::clamp(static_cast<int>(std::ceil(kDensityLevels * std::cbrt(density))), 1, kDensityLevels);
                int colour = 2 * fill[c] > cnt[c] ? 1 : 0;
                fmt::format_to(std::back_inserter(d[colour * kDensityLevels + level - 1]), "M{} {}h1v1h-1z", cj, ci);
            }
        fmt::format_to(std::back_inserter(out), "<g transform=\"translate({:.2f},{:.2f}) scale({:.6f})\" shape-rendering=\"crispEdges\">\n",
                       x0, y0, kPanel / g);
        for (int colour = 0; colour < 2; ++colour)
            for (int level = 1; level <= kDensityLevels; ++level) {
                const std::string& path = d[colour * kDensityLevels + level - 1];
                if (path.empty()) continue;
                double opacity = 0.4 + 0.6 * (level - 1) / (kDensityLevels - 1);
                fmt::format_to(std::back_inserter(out), "<path fill=\"{}\" fill-opacity=\"{:.2f}\" d=\"{}\"/>\n",
                               colour ? kFillColour : kEntryColour, opacity, path);
            }
        out += "</g>\n";
    }
};

}  // namespace

std::string spy_svg(const System& sys, const Factorization& f, const std::string& title) {
    const int n = sys.n();
    std::vector<Pivot> order;
    for (const ScheduledPivot& p : f.pivots) order.push_back(p.at);
    if (static_cast<int>(order.size()) != n)
        throw std::invalid_argument(fmt::format("spy: the factorization has {} pivots for {} unknowns", order.size(), n));
    std::vector<std::set<int>> pattern(n);
    for (int r = 0; r < n; ++r)
        for (const auto& e : sys.entries[r]) pattern[r].insert(e.first);
    std::vector<int> rpos(n, -1), cpos(n, -1);
    for (int k = 0; k < n; ++k) rpos[order[k].row] = k, cpos[order[k].col] = k;

    std::vector<Entry> d, pdq, lu;
    for (int r = 0; r < n; ++r)
        for (int c : pattern[r]) {
            d.push_back({r, c, false});
            pdq.push_back({rpos[r], cpos[c], false});
        }
    std::vector<std::vector<int>> L, U;
    symbolic_lu(pattern, order, L, U);
    long fill = 0;
    for (int k = 0; k < n; ++k) {
        const auto [r, c] = order[k];
        for (int j : U[k]) lu.push_back({k, cpos[j], !pattern[r].count(j)});
        for (int i : L[k]) lu.push_back({rpos[i], k, !pattern[i].count(c)});
    }
    for (const Entry& e : lu) fill += e.fill;
    const long nnz_d = static_cast<long>(d.size()), nnz_lu = static_cast<long>(lu.size());

    // Body boundaries along each axis, natural and pivot order.
    std::vector<int> rb(n), cb(n), prb(n), pcb(n);
    int bodies = 0;
    for (int k = 0; k < n; ++k) {
        rb[k] = sys.rows[k].body, cb[k] = sys.cols[k].body;
        prb[k] = sys.rows[order[k].row].body, pcb[k] = sys.cols[order[k].col].body;
        bodies = std::max(bodies, cb[k] + 1);
    }

    Figure fig(n, bodies);
    const double width = kLeft + 3 * kPanel + 2 * kGap + kRight, height = kTop + kPanel + kBottom;
    std::string& o = fig.out;
    fmt::format_to(std::back_inserter(o),
                   "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" "
                   "font-family=\"{}\">\n"
                   "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n",
                   width, height, width, height, kFont);
    const long lu_sched = f.nnz_L + f.nnz_U;
    std::string stats = fmt::format("n = {}, nnz(D) = {}, nnz(L+U) = {}, fill = {} ({:+.1f}%), ordering {}", n, nnz_d, nnz_lu, fill,
                                    nnz_d ? 100.0 * fill / nnz_d : 0.0, xml_escape(f.ordering));
    if (lu_sched != nnz_lu)
        stats += fmt::format("; after folding nnz(L+U) = {}, fill = {}", lu_sched, lu_sched - nnz_d);
    fig.text(width / 2, 26, "17", "middle", xml_escape(title), " font-weight=\"bold\"");
    fig.text(width / 2, 48, "13", "middle", stats, " fill=\"#333333\"");

    fig.panel(0, "D", std::move(d), body_boundaries(rb), body_boundaries(cb));
    fig.panel(1, "PDQ", std::move(pdq), body_boundaries(prb), body_boundaries(pcb));
    fig.panel(2, "LU", std::move(lu), body_boundaries(prb), body_boundaries(pcb));

    const double cy = kTop + kPanel + 24;
    fig.text(fig.panel_x(0) + kPanel / 2, cy, "14", "middle", "D (natural order)");
    fig.text(fig.panel_x(1) + kPanel / 2, cy, "14", "middle", "P D Q (pivot order)");
    fig.text(fig.panel_x(2) + kPanel / 2, cy, "14", "middle", "L + U (pivot order)");
    // Colour key under the third panel.
    const double kx = fig.panel_x(2) + kPanel / 2 - 92, ky = cy + 20;
    fmt::format_to(std::back_inserter(o), "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"9\" height=\"9\" fill=\"{}\"/>\n", kx, ky - 9,
                   kEntryColour);
    fig.text(kx + 14, ky, "12", "start", "entry of P D Q", " fill=\"#333333\"");
    fmt::format_to(std::back_inserter(o), "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"9\" height=\"9\" fill=\"{}\"/>\n", kx + 124,
                   ky - 9, kFillColour);
    fig.text(kx + 138, ky, "12", "start", "fill-in", " fill=\"#333333\"");
    if (n > kSmallMax)
        fig.text(kLeft, ky, "12", "start",
                 fmt::format("cells of {0} x {0} unknowns; shade: share of nonzeros in the cell; colour: majority",
                             (n + kGridMax - 1) / kGridMax),
                 " fill=\"#333333\"");
    o += "</svg>\n";
    return o;
}

}  // namespace nelu
