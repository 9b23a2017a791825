# DPML-Go. `make test` sets up (deps) and runs every test; `make bench` runs
# the benchmark driver.

GO       ?= go
GOFLAGS  ?= -buildvcs=false
export GOFLAGS
export CGO_ENABLED := 1
# Vector reduction kernels (dpml/kernels_simd.go) need Go's simd experiment;
# without it the portable scalar kernels are built (same results, slower).
GOEXPERIMENT ?= simd
export GOEXPERIMENT
COMMIT   := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X main.gitCommit=$(COMMIT)
# The main job: a short sweep on an emulated 2-node x 2-rank cluster, calls
# back to back as applications make them (issue 12), from Go (dpmlbench)
# and from C (dpmlbench-c with libdpml.so preloaded).
BENCH_ARGS ?= -sizes 8:4M:x8 -leaders 1,2 -pipeline 1,2 -time 50ms -progress -pattern b2b
CBENCH_ARGS ?= -sizes 8:4M:x8 -variants native,auto,dpml:l=1,dpml:l=2,pipelined:l=2,k=2 -time 50ms -progress -pattern b2b -check
MPICC    ?= mpicc

# Debian/Ubuntu packages: Open MPI (mpirun, mpicc, libmpi + pkg-config
# ompi-c for cgo), gfortran (mpif90, for the Fortran drop-in test), gcc for
# cgo, util-linux (unshare, taskset) for dpmlrun's fake nodes.
APT_PKGS := openmpi-bin libopenmpi-dev gfortran gcc pkg-config util-linux

# The long soak (dpml/soak_test.go): randomized calls on several layouts,
# several goroutines per rank, every result checked; then again under the
# race detector. SOAK_DURATION is per layout.
SOAK_DURATION      ?= 3m
SOAK_LAYOUTS       ?= 2,2;3,2;4;1,1,1
SOAK_RACE_DURATION ?= 2m
SOAK_RACE_LAYOUTS  ?= 3,2;2,2
# Fuzz targets: package and name; make fuzz runs each for FUZZTIME.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./config:FuzzParseBytes ./config:FuzzParseDuration ./config:FuzzVarParse \
	./internal/launch:FuzzParsePPN ./internal/launch:FuzzParseCPUList \
	./internal/bench:FuzzParseSizes ./dpml:FuzzTuningTable

.PHONY: all deps build lib nccl-plugin test lint bench clean soak fuzz fakesharp

all: build

deps:
	@command -v $(GO) >/dev/null 2>&1 || { \
		echo "make deps: no 'go' in PATH: install Go 1.26 (https://go.dev/dl/) and put it in PATH" >&2; exit 1; }
	@missing=""; \
	for c in mpirun mpicc mpif90 gcc pkg-config unshare taskset; do \
		command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; \
	done; \
	pkg-config --exists ompi-c 2>/dev/null || missing="$$missing ompi-c.pc"; \
	if [ -n "$$missing" ]; then \
		echo "make deps: missing:$$missing; installing $(APT_PKGS)"; \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "make deps: no apt-get: install Open MPI 4.x (mpirun, mpicc, mpif90, pkg-config ompi-c), gcc, pkg-config and util-linux yourself" >&2; exit 1; \
		fi; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; \
		elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
		else echo "make deps: installing packages needs root: run 'sudo make deps' (or as root: apt-get install $(APT_PKGS))" >&2; exit 1; fi; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(APT_PKGS) || exit 1; \
	fi
	@mpirun --version 2>/dev/null | grep -q "Open MPI" || { \
		echo "make deps: 'mpirun' is not Open MPI's (MPICH first in PATH?): dpmlrun needs Open MPI; run update-alternatives --config mpirun" >&2; exit 1; }

build: deps lib nccl-plugin
	$(GO) build ./...
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...
	@# The C benchmark client (no Go files in its directory: go skips it).
	$(MPICC) -O2 -Wall -I dropin -DDPML_COMMIT='"$(COMMIT)"' -o bin/dpmlbench-c cmd/dpmlbench-c/dpmlbench-c.c -ldl -lm
	@# The Go-vs-C call probe and its C twin (bench/diag/gocall.sh, issue 17).
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/gocall ./bench/diag/gocall
	mpicc -O2 -Wall -o bin/gocall-c bench/diag/gocall/ctwin/gocall.c

# The NCCL tuner plugin (nccl/, issue 20): NCCL_TUNER_PLUGIN=$(CURDIR)/bin/libdpml-nccl-tuner.so.
# No MPI, no CUDA needed to build it. bin/dpmlnccl (its offline tool) comes
# with the commands; cmd/ncclsweep is built on the GPU machine (bench/nccl/device.sh).
nccl-plugin:
	@mkdir -p bin
	$(GO) build -buildmode=c-shared -ldflags "$(LDFLAGS)" -o bin/libdpml-nccl-tuner.so ./nccl/plugin
	@rm -f bin/libdpml-nccl-tuner.h

# The drop-in MPI_Allreduce for C and Fortran programs (dropin/):
# LD_PRELOAD=$(CURDIR)/bin/libdpml.so, or dpmlrun -preload, or -ldpml.
lib: deps
	@mkdir -p bin
	$(GO) build -buildmode=c-shared -ldflags "$(LDFLAGS)" -o bin/libdpml.so ./dropin
	@rm -f bin/libdpml.h
	cp dropin/dpmlx.h bin/dpmlx.h

# The EMULATED SHArP switch the tests use (internal/fakesharp), for trying
# the offload path by hand: DPML_OFFLOAD=libsharp
# DPML_SHARP_LIB=$(CURDIR)/bin/fakesharp/libsharp_coll.so. Results on it
# say nothing about SHArP (README, "In-network reduction offload").
fakesharp:
	@mkdir -p bin/fakesharp
	$(CC) -shared -fPIC -O2 -Wall -o bin/fakesharp/libsharp_coll.so internal/fakesharp/csrc/fake_sharp_coll.c

test: deps
	$(GO) test ./... -count=1 -timeout 20m
	@# The portable kernels too (what a build without the simd experiment runs).
	GOEXPERIMENT= $(GO) test ./dpml -run 'Kernel|Partition' -count=1

soak: deps
	DPML_TEST_SOAK_DURATION=$(SOAK_DURATION) DPML_TEST_SOAK_LAYOUTS='$(SOAK_LAYOUTS)' DPML_TEST_SOAK_GOROUTINES=3 \
	DPML_MPITEST_TIMEOUT=3600 $(GO) test ./dpml -run '^TestSoak$$' -count=1 -v -timeout 120m
	DPML_TEST_SOAK_DURATION=$(SOAK_RACE_DURATION) DPML_TEST_SOAK_LAYOUTS='$(SOAK_RACE_LAYOUTS)' DPML_TEST_SOAK_GOROUTINES=3 \
	DPML_TEST_SOAK_MAX=300000 DPML_MPITEST_TIMEOUT=3600 $(GO) test -race ./dpml -run '^TestSoak$$' -count=1 -v -timeout 120m

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; \
		echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

lint:
	@out="$$(gofmt -l .)"; \
	if [ -n "$$out" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: deps build
	@out=bench/results/local-$$(date -u +%Y%m%dT%H%M%SZ); set -e; \
	echo "+ bin/dpmlrun -nodes 2 -ppn 2 -- bin/dpmlbench $(BENCH_ARGS) -out $$out"; \
	bin/dpmlrun -nodes 2 -ppn 2 -- bin/dpmlbench $(BENCH_ARGS) -out $$out; \
	echo "+ bin/dpmlrun -nodes 2 -ppn 2 -preload $(CURDIR)/bin/libdpml.so -- bin/dpmlbench-c $(CBENCH_ARGS) -quiet -out $$out/c-b2b"; \
	bin/dpmlrun -nodes 2 -ppn 2 -preload $(CURDIR)/bin/libdpml.so -- bin/dpmlbench-c $(CBENCH_ARGS) -quiet -out $$out/c-b2b; \
	echo; echo "== Go API (dpmlbench), calls back to back: DPML / native"; \
	bin/dpmlbench table -md -in $$out/results.json; \
	echo; echo "== C program (dpmlbench-c, libdpml.so preloaded), calls back to back: DPML / native"; \
	bin/dpmlbench table -md -in $$out/c-b2b/results.json; \
	echo; echo "results: $$out (Go) and $$out/c-b2b (C)"

clean:
	rm -rf bin bench/tmp
