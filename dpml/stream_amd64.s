#include "textflag.h"

// func streamCopyAVX(dst, src unsafe.Pointer, blocks uintptr)
// Copies blocks x 128 bytes from src to dst with non-temporal stores
// (VMOVNTDQ: dst must be 32-byte aligned), then SFENCE so the stores are
// ordered before whatever the caller does next (flags, returning).
TEXT ·streamCopyAVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	TESTQ CX, CX
	JZ done
loop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVDQU 64(SI), Y2
	VMOVDQU 96(SI), Y3
	VMOVNTDQ Y0, 0(DI)
	VMOVNTDQ Y1, 32(DI)
	VMOVNTDQ Y2, 64(DI)
	VMOVNTDQ Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop
done:
	SFENCE
	VZEROUPPER
	RET

// func demoteLines(addr, lines uintptr)
// CLDEMOTE each of lines 64-byte lines from p: a hint to move them from
// this core's caches towards the shared last-level cache, where the next
// reader (another core) finds them without a snoop. A NOP on CPUs without
// CLDEMOTE (it is encoded in the hint-NOP space).
TEXT ·demoteLines(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JZ ddone
dloop:
	CLDEMOTE (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ dloop
ddone:
	RET
