#include "textflag.h"

// func storeRelease(p *uint64, v uint64): a plain store; on amd64 (TSO) it
// is ordered after every earlier store.
TEXT ·storeRelease(SB), NOSPLIT, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, 0(AX)
	RET
