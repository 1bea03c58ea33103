/* startup.c: vector table and reset handler for a Cortex-M4F or M7 with an FPU (bare metal, no OS).
 * On reset: enable the FPU (the generated solvers use it), copy .data from flash, zero .bss, set up
 * semihosting when FW_SEMIHOSTING is defined (printf to the debugger or to QEMU), call main().
 * No C++ static constructors are run: the generated solvers have no globals that need them. */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[], _estack[];
int main(void);
void Reset_Handler(void);
#ifdef FW_SEMIHOSTING
void initialise_monitor_handles(void);
#endif

/* newlib's exit() runs the .fini_array through _fini, which -nostartfiles leaves out: nothing to do. */
void _init(void) {}
void _fini(void) {}

/* A fault ends the program (under QEMU with semihosting) or stops here (on hardware, for the debugger). */
void Fault_Handler(void) {
#ifdef FW_SEMIHOSTING
    _Exit(99);
#endif
    for (;;) {
    }
}

__attribute__((section(".isr_vector"), used)) void (*const fw_vectors[16])(void) = {
    (void (*)(void))_estack, Reset_Handler, Fault_Handler /* NMI */, Fault_Handler /* HardFault */,
    Fault_Handler /* MemManage */, Fault_Handler /* BusFault */, Fault_Handler /* UsageFault */,
    0, 0, 0, 0, Fault_Handler /* SVC */, Fault_Handler /* DebugMon */, 0, Fault_Handler /* PendSV */,
    Fault_Handler /* SysTick */};

void Reset_Handler(void) {
    /* CP10 and CP11 (the FPU) full access: SCB->CPACR, before any floating-point instruction */
    *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;
    __asm volatile("dsb\n\tisb" ::: "memory");
    for (uint32_t *s = _sidata, *d = _sdata; d < _edata;) *d++ = *s++;
    for (uint32_t* d = _sbss; d < _ebss;) *d++ = 0;
#ifdef FW_SEMIHOSTING
    initialise_monitor_handles();
#endif
    exit(main());
}
