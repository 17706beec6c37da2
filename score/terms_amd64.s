#include "textflag.h"

// Eight values a step, each lane computing Term's operations in Term's
// order: f = float32(tf) (VCVTDQ2PS: exact rounding of tf < 2^31, as Go's
// conversion), num = f*k1p1, den = f+norm, q = num/den, idf*q, then w times
// that. No fused multiply-add. The routine ends with VZEROUPPER
// (docs/CPU-ENGINE.md, the nineteenth session's pitfall).

// func termsAVX2(dst *float32, freqs *uint32, norms *float32, n uintptr, idf, k1p1, w float32) uintptr
TEXT ·termsAVX2(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ freqs+8(FP), SI
	MOVQ norms+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS idf+32(FP), Y5
	VBROADCASTSS k1p1+36(FP), Y6
	VBROADCASTSS w+40(FP), Y7
	XORQ AX, AX                 // values written
	SHRQ $3, CX                 // full groups
	JZ done

loop:
	VMOVDQU (SI)(AX*4), Y0      // tf
	VMOVMSKPS Y0, BX            // a tf >= 2^31: leave this group to the scalar path
	TESTL BX, BX
	JNZ done
	VCVTDQ2PS Y0, Y0            // f
	VMULPS Y6, Y0, Y1           // num = f * k1p1
	VADDPS (DX)(AX*4), Y0, Y2   // den = f + norm
	VDIVPS Y2, Y1, Y3           // q = num / den
	VMULPS Y5, Y3, Y3           // idf * q
	VMULPS Y7, Y3, Y3           // w * (idf * q)
	VMOVUPS Y3, (DI)(AX*4)
	ADDQ $8, AX
	DECQ CX
	JNZ loop

done:
	MOVQ AX, ret+48(FP)
	VZEROUPPER
	RET
