package sharp

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Our declarations of the public libsharp_coll ABI (SHArP's api/sharp_coll.h,
// as documented for SHArP 3.x): the layouts only, in our own names. Enums
// are C ints. Reserved fields are kept so that sizes and offsets match.

typedef struct {
	const char *ib_dev_list;     // "mlx5_0:1", NULL: the library's choice
	int user_progress_num_polls;
	int coll_timeout;            // ms, -1: none
	uint32_t flags;
	int reserved[3];
} dpml_sharp_config;

typedef struct {
	int (*bcast)(void *ctx, void *buf, int len, int root);
	int (*barrier)(void *ctx);
	int (*gather)(void *ctx, int root, void *sbuf, void *rbuf, int len);
} dpml_sharp_oob;

typedef struct {
	uint64_t job_id;
	int world_rank;
	int world_size;
	int (*progress_func)(void);
	int group_channel_idx;
	dpml_sharp_config config;
	dpml_sharp_oob oob_colls;
	int world_local_rank;
	int enable_thread_support;
	void *oob_ctx;
	int reserved[4];
} dpml_sharp_init_spec;

typedef struct {
	int sharp_pkt_version;
	uint64_t reserved[2];
	struct {
		uint64_t dtypes;
		uint64_t tag_dtypes;
		uint64_t reduce_ops;
		uint64_t feature_mask;
		uint64_t reserved[4];
	} support_mask;
	struct {
		int max_osts;
		int user_data_per_ost;
		int max_groups;
		int max_group_channels;
		int osts_per_group;
	} resources;
} dpml_sharp_caps;

typedef struct {
	int rank;
	int size;
	void *oob_ctx;
	const uint32_t *group_world_ranks;
	int reserved[2];
} dpml_sharp_comm_spec;

typedef struct {
	int type;     // 0: contiguous buffer
	int mem_type; // 0: host memory
	int reserved[2];
	union {
		struct {
			void *ptr;
			size_t length;
			void *mem_handle;
		} buffer;
		struct {
			unsigned count;
			void *vector;
		} iov;
	} u;
} dpml_sharp_desc;

typedef struct {
	int root;
	dpml_sharp_desc sbuf_desc;
	dpml_sharp_desc rbuf_desc;
	int dtype;
	size_t length; // elements
	int op;
	int tag_dtype;
	int aggr_mode; // 0: the library's choice
	int stream_lock_batch_size;
	size_t offset;
	int reserved[2];
} dpml_sharp_reduce_spec;

// The entry points, looked up with dlsym.
typedef struct {
	void *handle;
	int (*init)(dpml_sharp_init_spec *, void **ctx);
	int (*finalize)(void *ctx);
	int (*caps_query)(void *ctx, dpml_sharp_caps *);
	int (*comm_init)(void *ctx, dpml_sharp_comm_spec *, void **comm);
	int (*comm_destroy)(void *comm);
	int (*reg_mr)(void *ctx, void *buf, size_t size, void **mr);
	int (*dereg_mr)(void *ctx, void *mr);
	int (*allreduce_nb)(void *comm, dpml_sharp_reduce_spec *, void **req);
	int (*req_test)(void *req);
	int (*req_free)(void *req);
	const char *(*strerror)(int);
	const dpml_sharp_config *default_config; // data symbol; NULL if absent
	const int *emulated;                     // only the tests' fake library has it
} dpml_sharp_lib;

static const char *dpml_sharp_names[] = {
	"sharp_coll_init", "sharp_coll_finalize", "sharp_coll_caps_query",
	"sharp_coll_comm_init", "sharp_coll_comm_destroy", "sharp_coll_reg_mr",
	"sharp_coll_dereg_mr", "sharp_coll_do_allreduce_nb", "sharp_coll_req_test",
	"sharp_coll_req_free", "sharp_coll_strerror",
};

// dpml_sharp_open loads the library and its entry points; on failure it
// returns NULL and *missing names what is missing (or dlerror's text).
static dpml_sharp_lib *dpml_sharp_open(const char *path, const char **missing) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		*missing = dlerror();
		return NULL;
	}
	dpml_sharp_lib *l = calloc(1, sizeof *l);
	if (!l) {
		*missing = "out of memory";
		return NULL;
	}
	void **slots[] = {
		(void **)&l->init, (void **)&l->finalize, (void **)&l->caps_query,
		(void **)&l->comm_init, (void **)&l->comm_destroy, (void **)&l->reg_mr,
		(void **)&l->dereg_mr, (void **)&l->allreduce_nb, (void **)&l->req_test,
		(void **)&l->req_free, (void **)&l->strerror,
	};
	for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
		*slots[i] = dlsym(h, dpml_sharp_names[i]);
		if (!*slots[i]) {
			*missing = dpml_sharp_names[i];
			// The library stays loaded: unloading a library that may have
			// started threads is not safe, and a failed probe is rare.
			free(l);
			return NULL;
		}
	}
	l->default_config = dlsym(h, "sharp_coll_default_config");
	l->emulated = dlsym(h, "dpml_fakesharp_emulated");
	l->handle = h;
	return l;
}

// The OOB callbacks are Go functions (oob.go), called with the context
// pointer the spec carries.
extern int dpmlSharpOOBBcast(void *ctx, void *buf, int len, int root);
extern int dpmlSharpOOBBarrier(void *ctx);
extern int dpmlSharpOOBGather(void *ctx, int root, void *sbuf, void *rbuf, int len);

static int dpml_sharp_init(dpml_sharp_lib *l, uint64_t job, int rank, int size, int timeout_ms,
                           uintptr_t oob, void **ctx) {
	dpml_sharp_init_spec s;
	memset(&s, 0, sizeof s);
	s.job_id = job;
	s.world_rank = rank;
	s.world_size = size;
	s.world_local_rank = 0; // one process per node in the group
	s.group_channel_idx = 0;
	s.enable_thread_support = 0; // one goroutine uses a group at a time
	if (l->default_config) {
		s.config = *l->default_config;
	} else {
		s.config.user_progress_num_polls = 128;
		s.config.coll_timeout = -1;
	}
	if (timeout_ms > 0) {
		s.config.coll_timeout = timeout_ms;
	}
	s.oob_colls.bcast = dpmlSharpOOBBcast;
	s.oob_colls.barrier = dpmlSharpOOBBarrier;
	s.oob_colls.gather = dpmlSharpOOBGather;
	s.oob_ctx = (void *)oob;
	return l->init(&s, ctx);
}

static int dpml_sharp_caps_query(dpml_sharp_lib *l, void *ctx, uint64_t *dtypes, uint64_t *ops,
                                 int *payload, int *osts) {
	dpml_sharp_caps c;
	memset(&c, 0, sizeof c);
	int rc = l->caps_query(ctx, &c);
	*dtypes = c.support_mask.dtypes;
	*ops = c.support_mask.reduce_ops;
	*payload = c.resources.user_data_per_ost;
	*osts = c.resources.osts_per_group;
	return rc;
}

static int dpml_sharp_comm_init(dpml_sharp_lib *l, void *ctx, int rank, int size, uintptr_t oob, void **comm) {
	dpml_sharp_comm_spec s;
	memset(&s, 0, sizeof s);
	s.rank = rank;
	s.size = size;
	s.oob_ctx = (void *)oob;
	s.group_world_ranks = NULL; // the group's world is the context's
	return l->comm_init(ctx, &s, comm);
}

// dpml_sharp_start posts an in-place allreduce of n elements at buf,
// inside the registered region mr. The library copies the spec.
static int dpml_sharp_start(dpml_sharp_lib *l, void *comm, void *buf, size_t bytes, size_t n,
                            int dtype, int op, void *mr, void **req) {
	dpml_sharp_reduce_spec s;
	memset(&s, 0, sizeof s);
	s.sbuf_desc.u.buffer.ptr = buf;
	s.sbuf_desc.u.buffer.length = bytes;
	s.sbuf_desc.u.buffer.mem_handle = mr;
	s.rbuf_desc = s.sbuf_desc;
	s.dtype = dtype;
	s.length = n;
	s.op = op;
	s.tag_dtype = 12; // SHARP_DTYPE_NULL: no MINLOC/MAXLOC tag
	*req = NULL;
	return l->allreduce_nb(comm, &s, req);
}

static int dpml_sharp_test(dpml_sharp_lib *l, void *req) { return l->req_test(req); }
static int dpml_sharp_free(dpml_sharp_lib *l, void *req) { return l->req_free(req); }
static int dpml_sharp_comm_destroy(dpml_sharp_lib *l, void *comm) { return l->comm_destroy(comm); }
static int dpml_sharp_dereg(dpml_sharp_lib *l, void *ctx, void *mr) { return l->dereg_mr(ctx, mr); }
static int dpml_sharp_finalize(dpml_sharp_lib *l, void *ctx) { return l->finalize(ctx); }
static int dpml_sharp_reg(dpml_sharp_lib *l, void *ctx, void *buf, size_t n, void **mr) {
	return l->reg_mr(ctx, buf, n, mr);
}
static const char *dpml_sharp_strerror(dpml_sharp_lib *l, int rc) {
	const char *s = l->strerror ? l->strerror(rc) : NULL;
	return s ? s : "unknown error";
}
static int dpml_sharp_is_emulated(dpml_sharp_lib *l) { return l->emulated && *l->emulated; }
*/
import "C"

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"

	"github.com/dpmlgo/dpml/mpi"
)

// DefaultLibrary is the file name dlopen looks for when no path is given.
const DefaultLibrary = "libsharp_coll.so"

// SHArP's data types and reduction ops (enum sharp_datatype and enum
// sharp_reduce_op of the public API), as numbered there.
const (
	sharpUnsigned      = 0
	sharpInt           = 1
	sharpUnsignedLong  = 2
	sharpLong          = 3
	sharpFloat         = 4
	sharpDouble        = 5
	sharpUnsignedShort = 6
	sharpShort         = 7
	sharpUint8         = 10
	sharpInt8          = 11

	sharpOpMax  = 0
	sharpOpMin  = 1
	sharpOpSum  = 2
	sharpOpLand = 4
	sharpOpBand = 5
	sharpOpLor  = 6
	sharpOpBor  = 7
	sharpOpLxor = 8
	sharpOpBxor = 9
)

// sharpType maps an element kind to SHArP's data type (-1: none; complex
// numbers have no SHArP type).
var sharpType = [...]int{
	mpi.KindInt8: sharpInt8, mpi.KindInt16: sharpShort, mpi.KindInt32: sharpInt, mpi.KindInt64: sharpLong,
	mpi.KindUint8: sharpUint8, mpi.KindUint16: sharpUnsignedShort, mpi.KindUint32: sharpUnsigned,
	mpi.KindUint64: sharpUnsignedLong, mpi.KindFloat32: sharpFloat, mpi.KindFloat64: sharpDouble,
	mpi.KindComplex64: -1, mpi.KindComplex128: -1,
}

// sharpOp maps an op to SHArP's (-1: none). PROD is left out although
// the API names it: neither UCC's tl/sharp nor the NCCL SHArP plugin map
// a product to it, so it is not known to work.
var sharpOp = [...]int{
	mpi.OpSum: sharpOpSum, mpi.OpProd: -1, mpi.OpMin: sharpOpMin, mpi.OpMax: sharpOpMax,
	mpi.OpLand: sharpOpLand, mpi.OpLor: sharpOpLor, mpi.OpLxor: sharpOpLxor,
	mpi.OpBand: sharpOpBand, mpi.OpBor: sharpOpBor, mpi.OpBxor: sharpOpBxor,
}

// capsFromSharp translates the library's support masks (bit per SHArP
// type and op) into Caps over mpi kinds and ops.
func capsFromSharp(dtypes, ops uint64, payload, osts int) Caps {
	c := Caps{MaxPayload: max(payload, 0), MaxOutstanding: max(osts, 1), OnePerNode: true}
	for k, t := range sharpType {
		if t >= 0 && dtypes&(1<<uint(t)) != 0 {
			c.Kinds |= 1 << uint(k)
		}
	}
	for o, t := range sharpOp {
		if t >= 0 && ops&(1<<uint(t)) != 0 {
			c.Ops |= 1 << uint(o)
		}
	}
	return c
}

// lib is a loaded libsharp_coll. Libraries are loaded once per path and
// never unloaded.
type lib struct {
	c        *C.dpml_sharp_lib
	path     string
	emulated bool
}

var libs struct {
	sync.Mutex
	byPath map[string]*lib
	errs   map[string]error
}

// loadLib dlopens path (once per process) and looks up the entry points.
func loadLib(path string) (*lib, error) {
	if path == "" {
		path = DefaultLibrary
	}
	libs.Lock()
	defer libs.Unlock()
	if l := libs.byPath[path]; l != nil {
		return l, nil
	}
	if err := libs.errs[path]; err != nil {
		return nil, err
	}
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	var missing *C.char
	h := C.dpml_sharp_open(cp, &missing)
	if h == nil {
		err := fmt.Errorf("%w: dlopen %s: %s", ErrUnavailable, path, C.GoString(missing))
		if libs.errs == nil {
			libs.errs = map[string]error{}
		}
		libs.errs[path] = err
		return nil, err
	}
	l := &lib{c: h, path: path, emulated: C.dpml_sharp_is_emulated(h) != 0}
	if libs.byPath == nil {
		libs.byPath = map[string]*lib{}
	}
	libs.byPath[path] = l
	return l, nil
}

func (l *lib) strerror(rc C.int) string {
	return fmt.Sprintf("%s (%d)", C.GoString(C.dpml_sharp_strerror(l.c, rc)), int(rc))
}

// Libsharp is the backend over the real libsharp_coll, loaded with dlopen
// from Path (DefaultLibrary when empty) at the first Attach.
type Libsharp struct {
	Path string
}

// Name is "libsharp".
func (Libsharp) Name() string { return "libsharp" }

// Attach runs the library's documented sequence over c, one step at a time
// with the members agreeing on each step's outcome before the next
// collective one (so a member that fails does not leave the others
// waiting in the library's out-of-band collectives):
//
//	load (dlopen)  ->  sharp_coll_init (job id from rank 0; the out-of-band
//	barrier, bcast and gather run over MPI on c)  ->  sharp_coll_caps_query
//	->  sharp_coll_comm_init  ->  sharp_coll_reg_mr of the staging buffer
//
// Operations then run sharp_coll_do_allreduce_nb and sharp_coll_req_test
// / sharp_coll_req_free; Close runs sharp_coll_comm_destroy,
// sharp_coll_dereg_mr and sharp_coll_finalize.
func (b Libsharp) Attach(c *mpi.Comm, o AttachOptions) (*Group, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: attach to a nil communicator", ErrUnavailable)
	}
	maxBytes := o.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 4 << 10
	}
	l, err := loadLib(b.Path)
	if err = agreeStep(c, "load", err); err != nil {
		return nil, err
	}
	g := &libGroup{lib: l}
	g.oob = cgo.NewHandle(&oobComm{c: c})
	fail := func(err error) (*Group, error) {
		g.release()
		return nil, err
	}

	// The job id must be the same on every member: rank 0 draws it.
	job := []uint64{0}
	if c.Rank() == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		job[0] = binary.LittleEndian.Uint64(b[:])
	}
	if err := mpi.Bcast(c, job, 0); err != nil {
		return fail(fmt.Errorf("%w: broadcast job id: %w", ErrUnavailable, err))
	}
	ms := 0
	if o.Timeout > 0 {
		ms = int(min(o.Timeout/time.Millisecond, 1<<30))
	}
	var ctx unsafe.Pointer
	rc := C.dpml_sharp_init(l.c, C.uint64_t(job[0]), C.int(c.Rank()), C.int(c.Size()), C.int(ms),
		C.uintptr_t(g.oob), &ctx)
	if rc == 0 {
		g.ctx = ctx
	}
	if err := agreeStep(c, "sharp_coll_init", l.rcErr(rc)); err != nil {
		return fail(err)
	}

	var dtypes, ops C.uint64_t
	var payload, osts C.int
	rc = C.dpml_sharp_caps_query(l.c, g.ctx, &dtypes, &ops, &payload, &osts)
	caps := capsFromSharp(uint64(dtypes), uint64(ops), int(payload), int(osts))
	var capErr error
	if rc != 0 {
		capErr = l.rcErr(rc)
	}
	// Members share the switch, so their capabilities should be equal;
	// the intersection makes sure every member decides alike.
	caps, err = AgreeCaps(c, caps, capErr)
	if err != nil {
		return fail(fmt.Errorf("%w: sharp_coll_caps_query: %w", ErrUnavailable, err))
	}

	var comm unsafe.Pointer
	rc = C.dpml_sharp_comm_init(l.c, g.ctx, C.int(c.Rank()), C.int(c.Size()), C.uintptr_t(g.oob), &comm)
	if rc == 0 {
		g.scomm = comm
	}
	if err := agreeStep(c, "sharp_coll_comm_init", l.rcErr(rc)); err != nil {
		return fail(err)
	}

	// One registered staging buffer for the group's lifetime: the
	// library's memory registration is costly (and it keeps no cache), and
	// the engine's data lives in shared memory that moves between buffer
	// sets from call to call.
	size := (maxBytes + 4095) &^ 4095
	g.stage = C.aligned_alloc(4096, C.size_t(size))
	var regErr error
	if g.stage == nil {
		regErr = errors.New("out of memory for the staging buffer")
	} else {
		g.stageLen = maxBytes
		var mr unsafe.Pointer
		if rc := C.dpml_sharp_reg(l.c, g.ctx, g.stage, C.size_t(size), &mr); rc != 0 {
			regErr = l.rcErr(rc)
		} else {
			g.mr = mr
		}
	}
	if err := agreeStep(c, "sharp_coll_reg_mr", regErr); err != nil {
		return fail(err)
	}
	return &Group{impl: g, caps: caps, backend: "libsharp", emulated: l.emulated, maxBytes: maxBytes}, nil
}

func (l *lib) rcErr(rc C.int) error {
	if rc == 0 {
		return nil
	}
	return errors.New(l.strerror(rc))
}

// agreeStep makes a local step's outcome the group's: nil on every member,
// or on every member an error wrapping ErrUnavailable that names the step
// (and this member's own error, if it had one).
func agreeStep(c *mpi.Comm, step string, local error) error {
	flag := []int32{1}
	if local != nil {
		flag[0] = 0
	}
	if err := mpi.AllreduceInPlace(c, flag, mpi.OpMin); err != nil {
		return fmt.Errorf("%w: agree on %s: %w", ErrUnavailable, step, errors.Join(err, local))
	}
	switch {
	case flag[0] == 1:
		return nil
	case errors.Is(local, ErrUnavailable):
		return local // says what failed already
	case local != nil:
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, step, local)
	}
	return fmt.Errorf("%w: %s %w", ErrUnavailable, step, ErrElsewhere)
}

// AgreeCaps intersects caps over c (collective): the capabilities every
// member has. A member with a local error contributes a failure, and then
// every member returns an error.
func AgreeCaps(c *mpi.Comm, caps Caps, local error) (Caps, error) {
	w := caps.Words()
	if local != nil {
		w = FailedWords()
	}
	if err := mpi.AllreduceInPlace(c, w, mpi.OpMin); err != nil {
		return Caps{}, errors.Join(err, local)
	}
	got, ok := CapsFromWords(w)
	if !ok {
		if local != nil {
			return Caps{}, local
		}
		return Caps{}, ErrElsewhere
	}
	got.OnePerNode = caps.OnePerNode
	return got, nil
}

// libGroup is an attached libsharp_coll group.
type libGroup struct {
	lib      *lib
	oob      cgo.Handle
	ctx      unsafe.Pointer // struct sharp_coll_context *
	scomm    unsafe.Pointer // struct sharp_coll_comm *
	mr       unsafe.Pointer
	stage    unsafe.Pointer // C memory, registered
	stageLen int
}

func (g *libGroup) staging() []byte {
	return unsafe.Slice((*byte)(g.stage), g.stageLen)
}

func (g *libGroup) start(p unsafe.Pointer, count int, k mpi.Kind, op mpi.Op) (reqImpl, error) {
	dt, so := sharpType[k], sharpOp[op]
	if dt < 0 || so < 0 {
		return nil, fmt.Errorf("%w: %v %v has no SHArP equivalent", ErrNotSupported, k, op)
	}
	var req unsafe.Pointer
	rc := C.dpml_sharp_start(g.lib.c, g.scomm, p, C.size_t(count*k.Size()), C.size_t(count),
		C.int(dt), C.int(so), g.mr, &req)
	if rc != 0 {
		return nil, fmt.Errorf("sharp_coll_do_allreduce_nb: %s", g.lib.strerror(rc))
	}
	return &libReq{g: g, h: req}, nil
}

// libReq is a started libsharp_coll operation. sharp_coll_req_test
// reports completion only: a failed operation never completes, which the
// caller's bounded wait turns into an error.
type libReq struct {
	g *libGroup
	h unsafe.Pointer
}

func (r *libReq) test() (bool, error) {
	return C.dpml_sharp_test(r.g.lib.c, r.h) != 0, nil
}

func (r *libReq) free() {
	if r.h != nil {
		C.dpml_sharp_free(r.g.lib.c, r.h)
		r.h = nil
	}
}

func (g *libGroup) close() error {
	var errs []error
	if g.scomm != nil {
		if rc := C.dpml_sharp_comm_destroy(g.lib.c, g.scomm); rc != 0 {
			errs = append(errs, fmt.Errorf("sharp_coll_comm_destroy: %s", g.lib.strerror(rc)))
		}
		g.scomm = nil
	}
	if g.mr != nil {
		if rc := C.dpml_sharp_dereg(g.lib.c, g.ctx, g.mr); rc != 0 {
			errs = append(errs, fmt.Errorf("sharp_coll_dereg_mr: %s", g.lib.strerror(rc)))
		}
		g.mr = nil
	}
	if g.ctx != nil {
		if rc := C.dpml_sharp_finalize(g.lib.c, g.ctx); rc != 0 {
			errs = append(errs, fmt.Errorf("sharp_coll_finalize: %s", g.lib.strerror(rc)))
		}
		g.ctx = nil
	}
	g.release()
	return errors.Join(errs...)
}

// release frees what is ours after the library's part is gone (or on a
// failed attach, where the steps that succeeded are undone first).
func (g *libGroup) release() {
	if g.scomm != nil || g.mr != nil || g.ctx != nil {
		_ = g.close() // undo the steps that succeeded
		return
	}
	if g.stage != nil {
		C.free(g.stage)
		g.stage = nil
	}
	if g.oob != 0 {
		g.oob.Delete()
		g.oob = 0
	}
}
