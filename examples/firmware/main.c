/* main.c: a controller step on a Cortex-M: one call of a nelu solver (generated as "solver" by the
 * Makefile), its status checked. With FW_SEMIHOSTING the result is printed through the debugger
 * (or QEMU); on a real controller, q, qd and in come from the sensors and out goes to the drives. */
#include <stdio.h>

#include "solver.hpp"

#ifdef solver_WORK_BYTES
/* The solver's estimated stack exceeded the budget (nelu compile --max-stack): use the workspace
 * form, with its intermediate values in this static buffer instead of on the stack. One buffer per
 * concurrent call (here: one control loop). */
static double work[(solver_WORK_BYTES + sizeof(double) - 1) / sizeof(double)];
#endif

int main(void) {
    static double q[solver_NQ], qd[solver_NV], in[solver_NIN], out[solver_NOUT];
    for (int i = 0; i < solver_NQ; ++i) q[i] = 0.1 * (i + 1);  /* a fixed pose; all else zero */
#ifdef solver_WORK_BYTES
    const int status = solver_ws(q, qd, in, out, work);
    const char* form = "workspace form";
#else
    const int status = solver(q, qd, in, out);
    const char* form = "ordinary form";
#endif
#ifdef FW_SEMIHOSTING
    printf("solver (%s): status %d\n", form, status);
    for (int i = 0; i < solver_NOUT && i < 8; ++i) printf("  out[%d] = %.9g\n", i, out[i]);
#else
    (void)form;
#endif
    return status == NELU_STATUS_OK ? 0 : 1;
}
