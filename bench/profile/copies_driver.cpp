// N copies of the Panda ID solver called round-robin: same instructions per call, code working set N x 11.5 kB
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>
using F = int (*)(const double*, const double*, const double*, double*);
#define D(k) extern "C" int pc##k(const double*, const double*, const double*, double*);
D(0) D(1) D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) D(10) D(11)
F volatile fs[12] = {pc0, pc1, pc2, pc3, pc4, pc5, pc6, pc7, pc8, pc9, pc10, pc11};
double cpu_ns() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return 1e9 * t.tv_sec + t.tv_nsec; }
int main(int argc, char** argv) {
    int ncopies = atoi(argv[1]);
    long calls_arg = argc > 2 ? atol(argv[2]) : 0;
    std::mt19937_64 rng(6); std::uniform_real_distribution<double> u(-1, 1);
    double q[16][7], qd[16][7], in[16][49], out[7];
    for (int k = 0; k < 16; ++k) { for (auto& v : q[k]) v = 3.14159 * u(rng); for (auto& v : qd[k]) v = u(rng); for (auto& v : in[k]) v = u(rng); }
    int st = 0;
    if (calls_arg) { for (long c = 0; c < calls_arg; ++c) st |= fs[c % ncopies](q[c % 16], qd[c % 16], in[c % 16], out); printf("st %d\n", st); return 0; }
    std::vector<double> reps;
    for (int r = 0; r < 9; ++r) {
        long calls = 0; double t0 = cpu_ns(), e = 0;
        do { for (int k = 0; k < 48; ++k) st |= fs[k % ncopies](q[k % 16], qd[k % 16], in[k % 16], out); calls += 48; e = cpu_ns() - t0; } while (e < 1e8);
        reps.push_back(e / calls);
    }
    std::sort(reps.begin(), reps.end());
    printf("copies %d median %.1f min %.1f st %d\n", ncopies, reps[4], reps[0], st);
}
