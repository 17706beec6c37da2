#include "textflag.h"

// The unsigned compare x >= d is max(x, d) == x (VPMAXUD, VPCMPEQD: AVX2
// has no unsigned VPCMPGTD); each lane of the accumulator adds -1 per value
// >= d, so the count of values < d is n plus the accumulator's sum. Every
// general-purpose-to-vector move is VEX-encoded and the routine ends with
// VZEROUPPER (docs/CPU-ENGINE.md, the nineteenth session's pitfall).

// Lanes 8-t..7 of the 8 dwords at tailmask<>+4·t are all ones: the last t
// lanes of the overlapping tail load, the values no full group counted.
DATA tailmask<>+0(SB)/8, $0
DATA tailmask<>+8(SB)/8, $0
DATA tailmask<>+16(SB)/8, $0
DATA tailmask<>+24(SB)/8, $0
DATA tailmask<>+32(SB)/8, $-1
DATA tailmask<>+40(SB)/8, $-1
DATA tailmask<>+48(SB)/8, $-1
DATA tailmask<>+56(SB)/8, $-1
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// func countLess(docs *uint32, n uintptr, d uint32) uintptr
TEXT ·countLess(SB), NOSPLIT, $0-32
	MOVQ docs+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL d+16(FP), AX
	VMOVD AX, X0
	VPBROADCASTD X0, Y0        // d in every lane
	VPXOR Y1, Y1, Y1           // -(values >= d), per lane
	MOVQ CX, DX
	SHRQ $3, DX                // full groups (n >= 8: at least one)
	MOVQ SI, R8

loop:
	VMOVDQU (R8), Y2
	VPMAXUD Y0, Y2, Y3
	VPCMPEQD Y2, Y3, Y3        // -1 where x >= d
	VPADDD Y3, Y1, Y1
	ADDQ $32, R8
	DECQ DX
	JNZ loop

	MOVQ CX, DX
	ANDQ $7, DX
	JZ sum
	VMOVDQU -32(SI)(CX*4), Y2  // the last 8 values
	VPMAXUD Y0, Y2, Y3
	VPCMPEQD Y2, Y3, Y3
	LEAQ tailmask<>(SB), R9
	VPAND (R9)(DX*4), Y3, Y3   // only the last n%8 lanes
	VPADDD Y3, Y1, Y1

sum:
	VEXTRACTI128 $1, Y1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0x4E, X1, X2
	VPADDD X2, X1, X1
	VPSHUFD $0xB1, X1, X2
	VPADDD X2, X1, X1
	VMOVD X1, AX
	MOVLQSX AX, AX             // -(values >= d)
	ADDQ CX, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
