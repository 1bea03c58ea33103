// fwtool.cpp: host side of scripts/firmware.sh. Subcommands:
//   sizes NM.txt SOLVER...        code bytes per entry point, from `nm -S -C` of the solver objects
//   static CI...                  static stack per extern "C" entry: its frame plus the deepest chain
//                                 of callees in GCC's -fcallgraph-info=su files (library callees
//                                 such as sin and cos have no frame there and count 0)
//   count TRACE DRIVER_OUT        instructions per call, from QEMU's -singlestep -d exec,nochain trace
//                                 of the driver built with -DFW_TRACE (one trace line per instruction);
//                                 for a batch form (variants db, fb), per state of its call of 8 states
//   compare HOST TARGET NAME COUNTS STATIC SIZES ESTIMATES TOL_D TOL_F
//                                 every output of TARGET against HOST; prints the table rows of NAME;
//                                 exit 1 on any mismatch or missing output
//   jac HOST TARGET NAME LANE_BYTES TOL
//                                 a derivative solver's out and jac (jac_driver.cpp) on TARGET against
//                                 HOST, state by state: max |target - host| / max(1, max |host|) over
//                                 out and jac; prints a table row; exit 1 on a mismatch, a missing
//                                 state, or lanes other than LANE_BYTES on the target
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Key = std::pair<std::string, std::string>;  // solver, variant (d, f, dws, fws, db, fb)

constexpr int kVariants = 6;
const char* const kVariant[kVariants] = {"d", "f", "dws", "fws", "db", "fb"};
const char* const kSuffix[kVariants] = {"", "_f", "_ws", "_f_ws", "_batch", "_f_batch"};  // of the entry point
constexpr long kTraceStates = 8;  // states of a batch form's traced call (driver.cpp)

std::vector<std::string> lines(const std::string& file) {
    std::ifstream f(file);
    if (!f) {
        std::fprintf(stderr, "fwtool: cannot read %s\n", file.c_str());
        std::exit(2);
    }
    std::vector<std::string> r;
    for (std::string l; std::getline(f, l);) r.push_back(l);
    return r;
}

std::map<Key, std::string> read_table(const std::string& file) {  // "solver variant value" lines
    std::map<Key, std::string> t;
    for (const std::string& l : lines(file)) {
        std::istringstream s(l);
        std::string a, b, c;
        if (s >> a >> b >> c) t[{a, b}] = c;
    }
    return t;
}

int sizes(int argc, char** argv) {
    std::map<Key, long> bytes;
    for (const std::string& l : lines(argv[2])) {
        std::istringstream s(l);
        std::string addr, size, type;
        if (!(s >> addr >> size >> type) || (type != "T" && type != "t")) continue;
        std::string name;
        std::getline(s, name);
        name.erase(0, name.find_first_not_of(' '));
        for (int i = 3; i < argc; ++i) {
            const std::string n = argv[i];
            for (int k = 0; k < kVariants; ++k)
                if (name == n + kSuffix[k]) bytes[{n, kVariant[k]}] += std::strtol(size.c_str(), nullptr, 16);
            std::smatch m;
            if (std::regex_search(name, m, std::regex("::" + n + "_(ws_)?(impl|part[0-9]+)<(double|float)>\\(")))
                bytes[{n, std::string(m[3] == "double" ? "d" : "f") + (m[1].matched ? "ws" : "")}] += std::strtol(size.c_str(), nullptr, 16);
            else if (std::regex_search(name, m, std::regex("::" + n + "_lanes_(impl|part[0-9]+)<(double|float)[,>]")))  // a batch form's lane program
                bytes[{n, m[2] == "double" ? "db" : "fb"}] += std::strtol(size.c_str(), nullptr, 16);
        }
    }
    for (const auto& [k, b] : bytes) std::printf("%s %s %ld\n", k.first.c_str(), k.second.c_str(), b);
    return 0;
}

int static_stack(int argc, char** argv) {
    std::map<std::string, long> frame;
    std::map<std::string, std::vector<std::string>> callees;
    const std::regex node("node: \\{ title: \"([^\"]+)\" label: \"[^\"]*\\\\n([0-9]+) bytes \\((static|dynamic|dynamic,bounded)\\)\"");
    const std::regex edge("edge: \\{ sourcename: \"([^\"]+)\" targetname: \"([^\"]+)\"");
    for (int i = 2; i < argc; ++i)
        for (const std::string& l : lines(argv[i])) {
            std::smatch m;
            if (std::regex_search(l, m, node)) frame[m[1]] = std::stol(m[2]);
            else if (std::regex_search(l, m, edge)) callees[m[1]].push_back(m[2]);
        }
    std::map<std::string, long> memo;
    std::function<long(const std::string&)> depth = [&](const std::string& f) -> long {
        auto it = memo.find(f);
        if (it != memo.end()) return it->second;
        memo[f] = 0;  // no recursion in generated code; guards against a cycle anyway
        long deepest = 0;
        for (const std::string& c : callees[f]) deepest = std::max(deepest, depth(c));
        return memo[f] = (frame.count(f) ? frame[f] : 0) + deepest;
    };
    for (const auto& [f, b] : frame)
        if (f.find("::") == std::string::npos && f.rfind("_Z", 0) != 0) std::printf("%s - %ld\n", f.c_str(), depth(f));
    return 0;
}

int count(char** argv) {
    std::vector<long> marks;  // trace line of the first instruction of each call of fw_mark
    long n = 0;
    bool in_mark = false;
    std::ifstream f(argv[2]);
    if (!f) return std::fprintf(stderr, "fwtool: cannot read %s\n", argv[2]), 2;
    for (std::string l; std::getline(f, l);) {
        if (l.rfind("Trace ", 0) != 0) continue;
        const bool m = l.size() >= 8 && l.compare(l.size() - 8, 8, " fw_mark") == 0;
        if (m && !in_mark) marks.push_back(n);
        in_mark = m;
        ++n;
    }
    std::vector<Key> calls;
    for (const std::string& l : lines(argv[3])) {
        std::istringstream s(l);
        std::string t, a, b;
        if (s >> t >> a >> b && t == "T") calls.push_back({a, b});
    }
    if (marks.size() != 2 * calls.size() + 2) {
        std::fprintf(stderr, "fwtool: the trace has %zu marks, expected %zu\n", marks.size(), 2 * calls.size() + 2);
        return 1;
    }
    const long base = marks[1] - marks[0];  // the mark itself and the call instruction
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const long n = marks[2 * i + 3] - marks[2 * i + 2] - base, per = calls[i].second.size() == 2 && calls[i].second[1] == 'b' ? kTraceStates : 1;
        std::printf("%s %s %ld\n", calls[i].first.c_str(), calls[i].second.c_str(), (n + per / 2) / per);
    }
    return 0;
}

struct Run {
    std::map<std::string, std::string> hash;
    std::map<std::string, std::string> stack;  // "solver variant" -> bytes
    std::map<std::string, std::vector<std::string>> out;  // "solver variant state" -> status, words
    std::vector<Key> variants;
    bool ended = false;
};

Run parse(const std::string& file) {
    Run r;
    for (const std::string& l : lines(file)) {
        std::istringstream s(l);
        std::string t, a, b, c;
        s >> t;
        if (t == "I" && s >> a >> b) r.hash[a] = b;
        else if (t == "S" && s >> a >> b >> c) r.stack[a + " " + b] = c, r.variants.push_back({a, b});
        else if (t == "R" && s >> a >> b >> c) {
            std::vector<std::string> w;
            for (std::string x; s >> x;) w.push_back(x);
            r.out[a + " " + b + " " + c] = w;
        } else if (t == "E") r.ended = true;
    }
    return r;
}

double value(const std::string& hex, bool is_float) {
    if (is_float) {
        std::uint32_t b = static_cast<std::uint32_t>(std::stoul(hex, nullptr, 16));
        float v;
        std::memcpy(&v, &b, 4);
        return v;
    }
    std::uint64_t b = std::stoull(hex, nullptr, 16);
    double v;
    std::memcpy(&v, &b, 8);
    return v;
}

/// One output line of a state, target against host (entry 0 the status, then the values in hex):
/// max |target - host| / max(1, max |host|); infinite where the target's value is not finite.
double row_error(const std::vector<std::string>& t, const std::vector<std::string>& h, bool is_float) {
    double diff = 0, scale = 1;
    for (std::size_t i = 1; i < t.size(); ++i) {
        const double a = value(t[i], is_float), b = value(h[i], is_float);
        diff = std::max(diff, std::isfinite(a) ? std::fabs(a - b) : INFINITY);
        scale = std::max(scale, std::fabs(b));
    }
    return diff / scale;
}

int compare(char** argv) {
    const Run host = parse(argv[2]), target = parse(argv[3]);
    const std::string name = argv[4];
    const auto counts = read_table(argv[5]), stat = read_table(argv[6]), size = read_table(argv[7]);
    const auto estimate = read_table(argv[8]);
    const double tol_d = std::atof(argv[9]), tol_f = std::atof(argv[10]);
    int bad = 0;
    if (!target.ended) std::fprintf(stderr, "fwtool: %s: the target's output ends early\n", name.c_str()), ++bad;
    for (const auto& [s, h] : host.hash)
        if (target.hash.count(s) && target.hash.at(s) != h)
            std::fprintf(stderr, "fwtool: %s: %s: the target's inputs differ from the host's\n", name.c_str(), s.c_str()), ++bad;
    for (const auto& [solver, v] : target.variants) {
        const bool is_float = v[0] == 'f';
        const std::string ref_v = is_float ? "f" : "d";  // the ordinary entry point on the host
        std::string entry = solver;
        for (int k = 0; k < kVariants; ++k)
            if (v == kVariant[k]) entry += kSuffix[k];
        double worst = 0;
        int states = 0, status_mismatch = 0;
        for (int k = 0; k < 100; ++k) {
            const std::string tk = solver + " " + v + " " + std::to_string(k), hk = solver + " " + ref_v + " " + std::to_string(k);
            if (!target.out.count(tk) || !host.out.count(hk)) continue;
            const auto &t = target.out.at(tk), &h = host.out.at(hk);
            if (t.empty() || t.size() != h.size() || t[0] != h[0]) {
                ++status_mismatch;
                continue;
            }
            worst = std::max(worst, row_error(t, h, is_float));
            ++states;
        }
        const double tol = is_float ? tol_f : tol_d;
        const bool ok = states == 100 && status_mismatch == 0 && worst <= tol;
        bad += !ok;
        auto get = [](const std::map<Key, std::string>& m, const Key& k) { return m.count(k) ? m.at(k) : std::string("-"); };
        std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %.1e | %s |\n", name.c_str(), entry.c_str(), get(size, {solver, v}).c_str(),
                    get(estimate, {solver, v}).c_str(), get(stat, {entry, "-"}).c_str(), target.stack.at(solver + " " + v).c_str(), get(counts, {solver, v}).c_str(),
                    std::to_string(states).c_str(), worst, ok ? "ok" : status_mismatch ? "FAIL (status)" : "FAIL");
    }
    if (target.variants.empty()) std::fprintf(stderr, "fwtool: %s: no solver ran\n", name.c_str()), ++bad;
    return bad ? 1 : 0;
}

/// jac_driver.cpp's "J state status hex..." lines, by state
std::map<int, std::vector<std::string>> jac_rows(const std::string& file, std::string& name, int& lane_bytes, bool& ended) {
    std::map<int, std::vector<std::string>> rows;
    ended = false;
    lane_bytes = -1;
    for (const std::string& l : lines(file)) {
        std::istringstream s(l);
        std::string tag;
        s >> tag;
        if (tag == "N") {
            int nout = 0, njac = 0;
            s >> name >> nout >> njac >> lane_bytes;
        }
        if (tag == "E") ended = true;
        if (tag != "J") continue;
        int k = -1;
        s >> k;
        std::vector<std::string>& r = rows[k];
        for (std::string w; s >> w;) r.push_back(w);  // status, then the values
    }
    return rows;
}

int jac(char** argv) {
    std::string host_name, target_name;
    bool host_ended = false, target_ended = false;
    int host_lanes = -1, target_lanes = -1;
    const auto host = jac_rows(argv[2], host_name, host_lanes, host_ended), target = jac_rows(argv[3], target_name, target_lanes, target_ended);
    const std::string name = argv[4];
    const int expected_lanes = std::atoi(argv[5]);  // the lane bytes the target must build with
    const double tol = std::atof(argv[6]);
    double worst = 0;
    int states = 0, status_mismatch = 0;
    for (const auto& [k, h] : host) {
        if (!target.count(k)) continue;
        const std::vector<std::string>& t = target.at(k);
        if (t.empty() || t.size() != h.size() || t[0] != h[0]) {
            ++status_mismatch;
            continue;
        }
        worst = std::max(worst, row_error(t, h, false));
        ++states;
    }
    const bool ok = host_ended && target_ended && host.size() == 100 && states == 100 && status_mismatch == 0 && worst <= tol &&
                    target_lanes == expected_lanes;
    const std::string lanes = target_lanes > 0 ? std::to_string(target_lanes / 8) + " columns of double per instruction (" +
                                                     std::to_string(target_lanes) + "-byte vectors)"
                                               : "none: column by column";
    std::printf("| %s | %s_derivatives | %s | %d | %.1e | %s |\n", name.c_str(), host_name.c_str(), lanes.c_str(), states, worst,
                ok ? "ok" : target_lanes != expected_lanes ? "FAIL (lanes)" : status_mismatch ? "FAIL (status)" : "FAIL");
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "sizes" && argc >= 4) return sizes(argc, argv);
    if (cmd == "static" && argc >= 3) return static_stack(argc, argv);
    if (cmd == "count" && argc == 4) return count(argv);
    if (cmd == "compare" && argc == 11) return compare(argv);
    if (cmd == "jac" && argc == 7) return jac(argv);
    std::fprintf(stderr, "usage: fwtool sizes|static|count|compare|jac ... (see fwtool.cpp)\n");
    return 2;
}
