package prefault

/*
#define _GNU_SOURCE 1
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

// dpml_populate maps [p, p+n) into the page tables, n a multiple of the
// page size.
static void dpml_populate(char *p, size_t n) {
	if (n == 0 || madvise(p, n, MADV_POPULATE_READ) == 0) return;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t o = 0; o < n; o += pg) (void)*(volatile const char *)(p + o);
}

typedef struct { uintptr_t at; long bytes; } dpml_prefault_arg;

static int dpml_prefault_phdr(struct dl_phdr_info *info, size_t size, void *arg) {
	dpml_prefault_arg *a = arg;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;
		mine = p->p_type == PT_LOAD && a->at >= lo && a->at < lo + p->p_memsz;
	}
	if (!mine) return 0;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		if (p->p_type != PT_LOAD || (p->p_flags & PF_W) || !(p->p_flags & PF_R)) continue;
		uintptr_t lo = (info->dlpi_addr + p->p_vaddr) & ~(pg - 1);
		uintptr_t hi = (info->dlpi_addr + p->p_vaddr + p->p_filesz + pg - 1) & ~(pg - 1);
		if (hi <= lo) continue;
		dpml_populate((char *)lo, hi - lo);
		a->bytes += (long)(hi - lo);
	}
	return 1;
}

// dpml_prefault_self populates the read-only segments of the object that
// holds this function and returns their bytes (0: none found).
static long dpml_prefault_self(void) {
	dpml_prefault_arg a = {(uintptr_t)dpml_prefault_self, 0};
	dl_iterate_phdr(dpml_prefault_phdr, &a);
	return a.bytes;
}
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

var (
	once  sync.Once
	bytes int64
	took  time.Duration
)

// Self maps in the read-only segments (code, read-only data) of the
// object file holding this code, once per process. It returns their
// size in bytes (0 when the dynamic linker does not list the object),
// how long it took, and whether this call did it.
func Self() (n int64, d time.Duration, first bool) {
	once.Do(func() {
		t0 := time.Now()
		bytes = int64(C.dpml_prefault_self())
		took, first = time.Since(t0), true
	})
	return bytes, took, first
}

// Populate maps b's pages into the page tables as Self does its
// segments'; b must start on a page and span whole pages.
func Populate(b []byte) {
	if len(b) > 0 {
		C.dpml_populate((*C.char)(unsafe.Pointer(&b[0])), C.size_t(len(b)))
	}
}
