// Execution contexts for the emulator's fibers: a stack of their own and a
// switch between them. On x86-64 the switch is a few instructions of
// Kiln's own (callee-saved registers, MXCSR and the x87 control word, then
// the stack pointer): besides being fast, it is not glibc's swapcontext,
// which AddressSanitizer intercepts to clear the whole target stack's shadow
// on every switch (losing the redzones of a fiber's live frames, so a
// per-thread array overrun after a barrier would go unseen) and which makes a
// signal-mask system call per switch. Elsewhere it falls back to ucontext.
#pragma once

#include <cstddef>

#if defined(__x86_64__)
#define KILN_EMU_OWN_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace kiln::emu::detail {

struct Context {
#ifdef KILN_EMU_OWN_SWITCH
  void* sp = nullptr;  // the saved stack pointer while switched out
#else
  ucontext_t uc;
#endif
};

// Makes `c` start `entry` (which must never return) on [base, base + size)
// at its first switch.
void context_init(Context& c, char* base, size_t size, void (*entry)());

// Saves the running context into `from` and continues `to`; returns when
// something switches back to `from`.
void context_switch(Context& from, Context& to);

}  // namespace kiln::emu::detail
