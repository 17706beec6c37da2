#include "textflag.h"

// Both routines decode a full bp128 block 8 values at a time: the low
// 128-bit lane is loaded from the group's first byte, the high lane from
// byte 4·w/8 (where value 4 starts, up to 4 bits in), a per-width byte
// shuffle gathers each value's 4 bytes into its dword, a per-lane variable
// shift and the mask extract it (compress/bp128docs.go).

// func bp128Docs(out *uint32, in *byte, w, groups uintptr, shuf *[32]byte, shift *[8]uint32, mask, carry0 uint32) uint32
TEXT ·bp128Docs(SB), NOSPLIT, $0-60
	MOVQ out+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ DX, R10
	SHRQ $1, R10               // high lane offset: 4·w/8 = w/2 bytes
	MOVQ groups+24(FP), CX
	MOVQ shuf+32(FP), R8
	MOVQ shift+40(FP), R9
	VMOVDQU (R8), Y10          // byte shuffle of the width
	VMOVDQU (R9), Y11          // per-lane shift counts
	MOVL mask+48(FP), AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	MOVL carry0+52(FP), AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13      // running carry, all lanes
	VPCMPEQD Y14, Y14, Y14
	VPSRLD $31, Y14, Y14       // 1 in every lane
	MOVL $7, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15      // VPERMD index: lane 7 everywhere

docsloop:
	VMOVDQU (SI), X0
	VINSERTI128 $1, (SI)(R10*1), Y0, Y0
	VPSHUFB Y10, Y0, Y0
	VPSRLVD Y11, Y0, Y0
	VPAND Y12, Y0, Y0          // the 8 values
	VPADDD Y14, Y0, Y0         // value + 1
	VPSLLDQ $4, Y0, Y1
	VPADDD Y1, Y0, Y0
	VPSLLDQ $8, Y0, Y1
	VPADDD Y1, Y0, Y0          // prefix within each 128-bit lane
	VPSHUFD $0xFF, Y0, Y1      // each lane's sum in all its dwords
	VPERM2I128 $0x08, Y1, Y1, Y1 // low lane's sum to the high lane, low zero
	VPADDD Y1, Y0, Y0          // prefix of the group
	VPERMD Y0, Y15, Y2         // the group's sum in every lane
	VPADDD Y13, Y0, Y0         // + carry
	VMOVDQU Y0, (DI)
	VPADDD Y2, Y13, Y13        // carry += group sum
	ADDQ DX, SI
	ADDQ $32, DI
	DECQ CX
	JNZ docsloop

	VMOVD X13, AX
	SUBL carry0+52(FP), AX
	MOVL AX, ret+56(FP)
	VZEROUPPER
	RET

// func bp128Plus1(out *uint32, in *byte, w, groups uintptr, shuf *[32]byte, shift *[8]uint32, mask uint32)
TEXT ·bp128Plus1(SB), NOSPLIT, $0-52
	MOVQ out+0(FP), DI
	MOVQ in+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ DX, R10
	SHRQ $1, R10
	MOVQ groups+24(FP), CX
	MOVQ shuf+32(FP), R8
	MOVQ shift+40(FP), R9
	VMOVDQU (R8), Y10
	VMOVDQU (R9), Y11
	MOVL mask+48(FP), AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VPCMPEQD Y14, Y14, Y14
	VPSRLD $31, Y14, Y14

plusloop:
	VMOVDQU (SI), X0
	VINSERTI128 $1, (SI)(R10*1), Y0, Y0
	VPSHUFB Y10, Y0, Y0
	VPSRLVD Y11, Y0, Y0
	VPAND Y12, Y0, Y0
	VPADDD Y14, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ DX, SI
	ADDQ $32, DI
	DECQ CX
	JNZ plusloop

	VZEROUPPER
	RET
