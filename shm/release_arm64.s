#include "textflag.h"

// func storeRelease(p *uint64, v uint64): store-release (STLR).
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVD	p+0(FP), R0
	MOVD	v+8(FP), R1
	STLR	R1, (R0)
	RET
