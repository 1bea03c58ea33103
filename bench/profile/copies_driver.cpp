// copies_driver.cpp: N copies of one small generated solver (the Panda's ID, 11.5 kB of machine
// code) called round-robin: the same instructions per call, N times the code working set. With
// N = 1 the code stays in the 32 KiB I1; with N = 12 every call misses each of its ~180 lines, so the
// difference of the times per call is the cost of refetching code from L2 (docs/large-robots.md).
//   nelu compile robots/panda_gaz2019.urdf --problem id --scalar double -o G
//   for k in 0..11: sed "s/panda_gaz2019_id\b/pc$k/g; s/panda_gaz2019_id_/pc${k}_/g" G/panda_gaz2019_id.cpp \
//       | sed 's/#include "pc[0-9]*.hpp"/#include "panda_gaz2019_id.hpp"/' > c$k.cpp; g++ -O2 -I runtime/include -I G -c c$k.cpp
//   g++ -O2 copies_driver.cpp c*.o -o drv; ./drv 1; ./drv 12      (./drv N CALLS: N calls, for cachegrind)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <vector>

#include "../timing.hpp"
using F = int (*)(const double*, const double*, const double*, double*);
#define D(k) extern "C" int pc##k(const double*, const double*, const double*, double*);
D(0) D(1) D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) D(10) D(11)
F volatile fs[12] = {pc0, pc1, pc2, pc3, pc4, pc5, pc6, pc7, pc8, pc9, pc10, pc11};
int main(int argc, char** argv) {
    int ncopies = atoi(argv[1]);
    long calls_arg = argc > 2 ? atol(argv[2]) : 0;
    std::mt19937_64 rng(6); std::uniform_real_distribution<double> u(-1, 1);
    double q[16][7], qd[16][7], in[16][49], out[7];
    for (int k = 0; k < 16; ++k) { for (auto& v : q[k]) v = 3.14159 * u(rng); for (auto& v : qd[k]) v = u(rng); for (auto& v : in[k]) v = u(rng); }
    int st = 0;
    if (calls_arg) { for (long c = 0; c < calls_arg; ++c) st |= fs[c % ncopies](q[c % 16], qd[c % 16], in[c % 16], out); printf("st %d\n", st); return 0; }
    const std::vector<double> reps = nelu::bench::ns_per_call(
        [&](int k) { st |= fs[k % ncopies](q[k % 16], qd[k % 16], in[k % 16], out); }, 9, 48);
    printf("copies %d median %.1f min %.1f st %d\n", ncopies, reps[4], reps[0], st);
}
