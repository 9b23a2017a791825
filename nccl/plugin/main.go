package main

// main is never run: the package is built with -buildmode=c-shared, and
// NCCL calls the symbols plugin.c defines.
func main() {}
