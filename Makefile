# DPML-Go. `make test` sets up (deps) and runs every test; `make bench` runs
# the benchmark driver.
#
# Two MPI ABIs from one source. MPI=openmpi (the default) builds into bin/
# against Open MPI (pkg-config ompi-c); MPI=mpich builds the same programs
# into bin/mpich/ against MPICH (pkg-config mpich, Go build tag mpich), the
# ABI MVAPICH2, Intel MPI and Cray MPICH share. Same file names in each
# directory, so a script switches ABI by switching directory:
#   make build MPI=mpich && bin/mpich/dpmlrun -nodes 2 -ppn 2 -preload $PWD/bin/mpich/libdpml.so -- ./app

GO       ?= go
GOFLAGS  ?= -buildvcs=false
export GOFLAGS
export CGO_ENABLED := 1
# Vector reduction kernels (dpml/kernels_simd.go) need Go's simd experiment;
# without it the portable scalar kernels are built (same results, slower).
GOEXPERIMENT ?= simd
export GOEXPERIMENT
COMMIT   := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -X main.gitCommit=$(COMMIT) -X github.com/dpmlgo/dpml/internal/runtime/version.Commit=$(COMMIT)
# The main job: a short sweep on an emulated 2-node x 2-rank cluster, calls
# back to back as applications make them, from Go (dpmlbench)
# and from C (dpmlbench-c with libdpml.so preloaded).
BENCH_ARGS ?= -sizes 8:4M:x8 -leaders 1,2 -pipeline 1,2 -time 50ms -progress -pattern b2b
CBENCH_ARGS ?= -sizes 8:4M:x8 -variants native,auto,dpml:l=1,dpml:l=2,pipelined:l=2,k=2 -time 50ms -progress -pattern b2b -check
# The tools with plotting and progress bars are modules of their own
# (go.work joins them here), so that a program importing the library
# never downloads those dependencies; ./... stops at a module's edge.
TOOLPKGS := ./cmd/dpmlbench/... ./cmd/dpmlnccl/... ./internal/tools/bench/...
MPI      ?= openmpi
ifeq ($(MPI),openmpi)
BIN      := bin
GOTAGS   :=
# Debian's flavor-specific name when there is one: it stays Open MPI's
# whichever MPI the mpicc alternative points to.
MPICC    ?= $(shell command -v mpicc.openmpi >/dev/null 2>&1 && echo mpicc.openmpi || echo mpicc)
else ifeq ($(MPI),mpich)
BIN      := bin/mpich
GOTAGS   := -tags mpich
MPICC    ?= $(shell command -v mpicc.mpich >/dev/null 2>&1 && echo mpicc.mpich || echo mpicc)
else
$(error MPI=$(MPI): want openmpi (default) or mpich)
endif

# Debian/Ubuntu packages: Open MPI (mpirun, mpicc, libmpi + pkg-config
# ompi-c for cgo), gfortran (mpif90, for the Fortran drop-in test), gcc for
# cgo, util-linux (unshare, taskset) for dpmlrun's fake nodes.
APT_PKGS := openmpi-bin libopenmpi-dev gfortran gcc pkg-config util-linux
# MPICH (mpiexec.hydra, mpicc.mpich, mpif90.mpich, libmpich + pkg-config
# mpich), for MPI=mpich and the MPICH part of make test.
APT_PKGS_MPICH := mpich libmpich-dev gfortran gcc pkg-config util-linux

# The MPICH part of `make test` (CI: 2 cores, 20 minutes with the Open MPI
# suite): the conformance suite on two layouts, the drop-in library's C
# (every type, op, in place, 1,000 split communicators, /dev/shm clean),
# Fortran and abort tests, the calls its C layer runs without Go on one
# node and on two (TestRepeat: the leader communicator's handle crosses
# from Go to C, an int with MPICH), the C benchmark client, and dpmlrun's
# layouts.
# `make test-mpich` runs every ABI-dependent suite on MPICH in full.
MPICH_QUICK_CONFORMANCE ?= ^TestConformance$$/^(2x2|2\+3)$$
MPICH_QUICK_RUN         ?= ^(TestC|TestFortran|TestAbort|TestRepeat|TestClientC|TestEmulatedLayouts)$$
MPICH_QUICK_PKGS        := ./dropin ./cmd/dpmlbench ./cmd/dpmlrun
MPICH_FULL_PKGS         := ./mpi ./internal/tools/launch ./internal/testkit/mpitest ./cmd/dpmlrun ./dropin

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
	./internal/tools/launch:FuzzParsePPN ./internal/tools/launch:FuzzParseCPUList \
	./internal/tools/bench:FuzzParseSizes ./dpml:FuzzTuningTable

.PHONY: all deps deps-openmpi deps-mpich build commands lib nccl-plugin install install-files uninstall test test-mpich lint bench clean soak fuzz fakesharp

all: build

# deps installs what the chosen MPI needs (make deps MPI=mpich for MPICH).
deps: deps-$(MPI)

deps-openmpi:
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

# MPICH next to Open MPI. Debian registers MPICH in the same alternatives
# (mpicc, mpirun/mpiexec, mpi.pc) as Open MPI; installing it must not move
# them, or every Open MPI build and test on the machine breaks. So the
# groups are pinned to Open MPI (update-alternatives --set: manual mode)
# before the install, and checked after it. Nothing here relies on the
# alternatives: the MPICH build names MPICH explicitly (pkg-config mpich,
# mpicc.mpich, mpiexec.hydra).
deps-mpich:
	@command -v $(GO) >/dev/null 2>&1 || { \
		echo "make deps: no 'go' in PATH: install Go 1.26 (https://go.dev/dl/) and put it in PATH" >&2; exit 1; }
	@missing=""; \
	for c in mpiexec.hydra hydra_pmi_proxy mpicc.mpich mpif90.mpich gfortran gcc pkg-config unshare taskset; do \
		command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; \
	done; \
	pkg-config --exists mpich 2>/dev/null || missing="$$missing mpich.pc"; \
	if [ -n "$$missing" ]; then \
		echo "make deps: MPICH: missing:$$missing; installing $(APT_PKGS_MPICH)"; \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "make deps: no apt-get: install MPICH 4 (mpiexec.hydra, mpicc.mpich, mpif90.mpich, pkg-config mpich), gfortran, gcc, pkg-config and util-linux yourself" >&2; exit 1; \
		fi; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; \
		elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
		else echo "make deps: installing packages needs root: run 'sudo make deps MPI=mpich' (or as root: apt-get install $(APT_PKGS_MPICH))" >&2; exit 1; fi; \
		pin() { \
			arch=$$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null); \
			for g in mpi:/usr/bin/mpicc.openmpi mpirun:/usr/bin/mpirun.openmpi \
				"mpi-$$arch:/usr/lib/$$arch/openmpi/include"; do \
				name=$${g%%:*}; path=$${g#*:}; \
				if update-alternatives --list "$$name" 2>/dev/null | grep -qx "$$path"; then \
					$$SUDO update-alternatives --quiet --set "$$name" "$$path" || return 1; \
				fi; \
			done; \
		}; \
		pin || exit 1; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(APT_PKGS_MPICH) || exit 1; \
		pin || exit 1; \
		if command -v mpirun.openmpi >/dev/null 2>&1 && ! mpirun --version 2>/dev/null | grep -q "Open MPI"; then \
			echo "make deps: installing MPICH moved 'mpirun' away from Open MPI: run update-alternatives --set mpirun /usr/bin/mpirun.openmpi" >&2; exit 1; \
		fi; \
	fi
	@mpiexec.hydra -version 2>/dev/null | grep -q HYDRA || { echo "make deps: mpiexec.hydra is not MPICH's Hydra" >&2; exit 1; }

# Everything into $(BIN): bin/ for Open MPI, bin/mpich/ for MPI=mpich.
# bin/mpich/dpmlrun is built with the tag mpich too: it launches with
# MPICH's Hydra unless the program says otherwise (dpmlrun -mpi).
build: deps lib nccl-plugin commands
	$(GO) build $(GOTAGS) ./... $(TOOLPKGS)
	@# The Go-vs-C call probe and its C twin (bench/diag/gocall.sh).
	$(GO) build $(GOTAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/gocall ./bench/diag/gocall
	$(MPICC) -O2 -Wall -o $(BIN)/gocall-c bench/diag/gocall/ctwin/gocall.c

# The commands (dpmlrun, dpmlbench, dpml-info, ...) and the C benchmark
# client into $(BIN).
commands: deps
	@mkdir -p $(BIN)
	$(GO) build $(GOTAGS) -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/... ./cmd/dpmlbench
	@# The C benchmark client (no Go files in its directory: go skips it).
	$(MPICC) -O2 -Wall -I dropin -DDPML_COMMIT='"$(COMMIT)"' -o $(BIN)/dpmlbench-c cmd/dpmlbench-c/dpmlbench-c.c -ldl -lm

# The NCCL tuner plugin (nccl/): NCCL_TUNER_PLUGIN=$(CURDIR)/bin/libdpml-nccl-tuner.so.
# No MPI, no CUDA needed to build it. bin/dpmlnccl is its offline tool (static,
# for the GPU machine too); cmd/ncclsweep is built on the GPU machine
# (bench/nccl/device.sh, which needs both files of bin/).
nccl-plugin:
	@mkdir -p bin
	$(GO) build -buildmode=c-shared -ldflags "$(LDFLAGS)" -o bin/libdpml-nccl-tuner.so ./nccl/plugin
	@rm -f bin/libdpml-nccl-tuner.h
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/dpmlnccl ./cmd/dpmlnccl

# The drop-in MPI_Allreduce for C and Fortran programs (dropin/):
# LD_PRELOAD=$(CURDIR)/$(BIN)/libdpml.so, or dpmlrun -preload, or -ldpml.
lib: deps
	@mkdir -p $(BIN)
	$(GO) build $(GOTAGS) -buildmode=c-shared -ldflags "$(LDFLAGS)" -o $(BIN)/libdpml.so ./dropin
	@rm -f $(BIN)/libdpml.h
	cp dropin/dpmlx.h $(BIN)/dpmlx.h

# make install PREFIX=DIR (default /usr/local; DESTDIR for staging) builds
# the library and the commands, then copies the commands to PREFIX/bin,
# libdpml.so to PREFIX/lib, dpmlx.h to PREFIX/include and writes
# PREFIX/lib/pkgconfig/dpml.pc, so a program links the drop-in with
#   mpicc -o app app.c $$(pkg-config --cflags --libs dpml)
# (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig). MPI=mpich installs the MPICH-ABI
# build under the same names: give it its own PREFIX. make uninstall
# removes exactly the files install writes. install-files copies what is
# already built in $(BIN), without building.
PREFIX   ?= /usr/local
DESTDIR  ?=
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
INSTALL_CMDS := dpmlrun dpmlbench dpmlbench-c dpml-info
install: lib commands
	$(MAKE) --no-print-directory install-files

install-files:
	@for f in $(INSTALL_CMDS) libdpml.so; do \
		[ -f $(BIN)/$$f ] || { echo "make install: $(BIN)/$$f is missing: run make build$(if $(filter mpich,$(MPI)), MPI=mpich)" >&2; exit 1; }; \
	done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(addprefix $(BIN)/,$(INSTALL_CMDS)) $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(BIN)/libdpml.so $(DESTDIR)$(PREFIX)/lib/libdpml.so
	install -m 644 dropin/dpmlx.h $(DESTDIR)$(PREFIX)/include/dpmlx.h
	@printf '%s\n' \
		'prefix=$(PREFIX)' \
		'libdir=$${prefix}/lib' \
		'includedir=$${prefix}/include' \
		'' \
		'Name: dpml' \
		'Description: DPML-Go drop-in MPI_Allreduce (data-partitioning multi-leader), $(MPI) ABI' \
		'URL: https://github.com/dpmlgo/dpml' \
		'Version: $(VERSION)' \
		'Libs: -L$${libdir} -ldpml -Wl,-rpath,$${libdir}' \
		'Cflags: -I$${includedir}' >$(DESTDIR)$(PREFIX)/lib/pkgconfig/dpml.pc
	@echo "installed into $(DESTDIR)$(PREFIX): bin/ ($(INSTALL_CMDS)), lib/libdpml.so, include/dpmlx.h, lib/pkgconfig/dpml.pc"

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(INSTALL_CMDS)) \
		$(DESTDIR)$(PREFIX)/lib/libdpml.so $(DESTDIR)$(PREFIX)/include/dpmlx.h \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig/dpml.pc

# The EMULATED SHArP switch the tests use (internal/testkit/fakesharp), for trying
# the offload path by hand: DPML_OFFLOAD=libsharp
# DPML_SHARP_LIB=$(CURDIR)/bin/fakesharp/libsharp_coll.so. Results on it
# say nothing about SHArP (docs/guide.md, "In-network reduction offload").
fakesharp:
	@mkdir -p bin/fakesharp
	$(CC) -shared -fPIC -O2 -Wall -o bin/fakesharp/libsharp_coll.so internal/testkit/fakesharp/csrc/fake_sharp_coll.c

# Open MPI in full, then the MPICH subset (see MPICH_QUICK_*); make
# test-mpich runs MPICH's suites in full.
test: deps-openmpi deps-mpich
	$(GO) test ./... $(TOOLPKGS) -count=1 -timeout 20m
	@# The portable kernels too (what a build without the simd experiment runs).
	GOEXPERIMENT= $(GO) test ./dpml -run 'Kernel|Partition' -count=1
	@# The diagnostic build's step recorder (DPML_TRACE, dpml/trace.go).
	$(GO) test -tags dpmltrace ./dpml -run '^TestTrace$$' -count=1
	@echo "== MPICH (go test -tags mpich): conformance on 2x2 and 3+2, drop-in C and Fortran and its C-layer calls, C client, dpmlrun"
	$(GO) test -tags mpich -count=1 -timeout 20m ./dpml -run '$(MPICH_QUICK_CONFORMANCE)'
	$(GO) test -tags mpich -count=1 -timeout 20m $(MPICH_QUICK_PKGS) -run '$(MPICH_QUICK_RUN)'

# Every ABI-dependent suite against MPICH: the binding, the launcher and
# the test harness, dpmlrun, the drop-in library (C and Fortran), the
# conformance suite on every layout and the C benchmark client.
test-mpich: deps-mpich
	$(GO) test -tags mpich -count=1 -timeout 30m $(MPICH_FULL_PKGS)
	$(GO) test -tags mpich -count=1 -timeout 20m ./dpml -run '^TestConformance$$'
	$(GO) test -tags mpich -count=1 -timeout 20m ./cmd/dpmlbench -run '^TestClientC'

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
	$(GO) vet ./... $(TOOLPKGS)

# Both clients write the clients' default layout: bench/results/local-<UTC
# time>/<client>-<pattern> (bench.DefaultOutDir).
bench: deps build
	@out=bench/results/local-$$(date -u +%Y%m%dT%H%M%SZ); set -e; \
	echo "+ $(BIN)/dpmlrun -nodes 2 -ppn 2 -- $(BIN)/dpmlbench $(BENCH_ARGS) -out $$out/go-b2b"; \
	$(BIN)/dpmlrun -nodes 2 -ppn 2 -- $(BIN)/dpmlbench $(BENCH_ARGS) -out $$out/go-b2b; \
	echo "+ $(BIN)/dpmlrun -nodes 2 -ppn 2 -preload $(CURDIR)/$(BIN)/libdpml.so -- $(BIN)/dpmlbench-c $(CBENCH_ARGS) -quiet -out $$out/c-b2b"; \
	$(BIN)/dpmlrun -nodes 2 -ppn 2 -preload $(CURDIR)/$(BIN)/libdpml.so -- $(BIN)/dpmlbench-c $(CBENCH_ARGS) -quiet -out $$out/c-b2b; \
	echo; echo "== Go API (dpmlbench), calls back to back: DPML / native"; \
	$(BIN)/dpmlbench table -md -in $$out/go-b2b/results.json; \
	echo; echo "== C program (dpmlbench-c, libdpml.so preloaded), calls back to back: DPML / native"; \
	$(BIN)/dpmlbench table -md -in $$out/c-b2b/results.json; \
	echo; echo "results: $$out/go-b2b (Go) and $$out/c-b2b (C)"

clean:
	rm -rf bin bench/tmp
