#include "textflag.h"

// func getg() uintptr
// The runtime keeps the current g in thread-local storage; (TLS) is its
// slot, which the assembler rewrites for the platform (cuda/getg.go).
TEXT ·getg(SB), NOSPLIT, $0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
