package main

import (
	"bytes"
	"os"
	"testing"
)

// TestFusedHeaderCopy: dropin.c includes its own copy of the fused call's
// header (go generate ./dropin makes it), which must be the engine's byte
// for byte. Mutation: any edit of either copy alone fails it.
func TestFusedHeaderCopy(t *testing.T) {
	mine, err := os.ReadFile("fused.h")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := os.ReadFile("../dpml/internal/fused/fused.h")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mine, engine) {
		t.Fatal("dropin/fused.h differs from dpml/internal/fused/fused.h: run go generate ./dropin")
	}
}
