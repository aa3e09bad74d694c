// Fiber contexts (context.h).
#include "codegen/cuda/emulation/context.h"

#include <cstdint>
#include <cstdlib>

#ifdef KILN_EMU_OWN_SWITCH

// kiln_emu_switch_context(void** save_sp, void* new_sp): pushes the
// callee-saved state (System V: rbp rbx r12-r15, MXCSR, x87 control word),
// stores the stack pointer, loads the other one and pops its state.
// kiln_emu_fiber_start: the return address of a fresh context; calls the
// entry held in r12 on a 16-byte aligned stack, and has no caller to unwind to.
asm(R"(
  .text
  .p2align 4
  .globl kiln_emu_switch_context
  .hidden kiln_emu_switch_context
  .type kiln_emu_switch_context,@function
kiln_emu_switch_context:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kiln_emu_switch_context, .-kiln_emu_switch_context

  .p2align 4
  .globl kiln_emu_fiber_start
  .hidden kiln_emu_fiber_start
  .type kiln_emu_fiber_start,@function
kiln_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  xorl %ebp, %ebp
  call *%r12
  ud2
  .cfi_endproc
  .size kiln_emu_fiber_start, .-kiln_emu_fiber_start
)");

extern "C" void kiln_emu_switch_context(void** save_sp, void* new_sp);
extern "C" void kiln_emu_fiber_start();

namespace kiln::emu::detail {

void context_init(Context& c, char* base, size_t size, void (*entry)()) {
  // The frame kiln_emu_switch_context pops, from the top down: return
  // address, rbp, rbx, r12 (= entry), r13, r14, r15, MXCSR | x87 control word.
  // After its `ret` the stack pointer is 16-byte aligned, as a call needs.
  const uintptr_t top = (reinterpret_cast<uintptr_t>(base) + size) & ~uintptr_t{15};
  uint64_t* frame = reinterpret_cast<uint64_t*>(top - 80);
  uint32_t mxcsr = 0;
  uint16_t fpu_cw = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpu_cw));
  frame[0] = uint64_t{mxcsr} | (uint64_t{fpu_cw} << 32);
  frame[1] = 0;                                  // r15
  frame[2] = 0;                                  // r14
  frame[3] = 0;                                  // r13
  frame[4] = reinterpret_cast<uint64_t>(entry);  // r12
  frame[5] = 0;                                  // rbx
  frame[6] = 0;                                  // rbp
  frame[7] = reinterpret_cast<uint64_t>(&kiln_emu_fiber_start);
  c.sp = frame;
}

void context_switch(Context& from, Context& to) {
  kiln_emu_switch_context(&from.sp, to.sp);
}

}  // namespace kiln::emu::detail

#else

namespace kiln::emu::detail {

void context_init(Context& c, char* base, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = base;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}

void context_switch(Context& from, Context& to) {
  if (swapcontext(&from.uc, &to.uc) != 0) std::abort();
}

}  // namespace kiln::emu::detail

#endif
