// Fortran entry points of libdpml.so.
//
// Open MPI 4.1's Fortran bindings do not go through the C MPI_Allreduce:
// mpif.h and `use mpi` call mpi_allreduce_ (libmpi_mpifh, a weak alias of
// ompi_allreduce_f), `use mpi_f08` calls mpi_allreduce_f08_
// (libmpi_usempif08), and both end in PMPI_Allreduce (nm -D shows
// "U PMPI_Allreduce" in libmpi_mpifh.so). Interposing MPI_Allreduce therefore
// misses Fortran programs, so the Fortran symbols are defined here too, in
// every name mangling Open MPI exports: mpi_allreduce, mpi_allreduce_,
// mpi_allreduce__, MPI_ALLREDUCE and mpi_allreduce_f08_ (whose TYPE(MPI_Comm)
// etc. arguments are one-integer structs passed by reference, so they read
// as MPI_Fint*). The PMPI names (pmpi_allreduce_...) are left to the MPI
// library, as the profiling interface requires. The same goes for
// MPI_Finalize, which the Fortran bindings call as PMPI_Finalize.
//
// Each entry does what ompi_allreduce_f does: convert the handles with
// MPI_Comm_f2c / MPI_Type_f2c / MPI_Op_f2c, turn the Fortran MPI_IN_PLACE and
// MPI_BOTTOM sentinels (addresses of Open MPI's common blocks) into the C
// values, and store the error code in ierror (optional, so possibly NULL, in
// mpi_f08).
//
// MPICH (4.0, and the MPICH ABI family built from its binding generator)
// is the other way round: libmpichfort's mpi_allreduce_ (mpif.h, use mpi)
// and mpi_allreduce_f08ts_ (use mpi_f08) convert the handles and their own
// sentinels (MPIR_F_MPI_IN_PLACE, MPIR_F08_MPI_IN_PLACE) and call the C
// MPI_Allreduce ("U MPI_Allreduce" in nm -D libmpichfort.so.12, no
// PMPI_Allreduce), which this library interposes. Defining the Fortran
// names here would replace those wrappers with one that does not know
// MPICH's sentinels (a Fortran MPI_IN_PLACE would be read as a buffer), so
// with MPICH only mpi_finalize_f08_ is defined: it is the one Fortran entry
// that goes to PMPI_Finalize directly (objdump: mpi_finalize_f08_ calls
// PMPI_Finalize, mpi_finalize_ calls MPI_Finalize), and without it a
// use mpi_f08 program would finalize with the engines still set up.

#include <stddef.h>

#include "dropin.h"

#if defined(OPEN_MPI)
// The sentinels under every name a Fortran compiler may give them; weak, so
// the names a given Open MPI build lacks are NULL (only the gfortran name,
// mpi_fortran_in_place_, exists in Debian's build).
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));

static int is_in_place(const void *p) {
	return p != NULL && (p == (void *)&mpi_fortran_in_place || p == (void *)&mpi_fortran_in_place_ ||
			     p == (void *)&mpi_fortran_in_place__ || p == (void *)&MPI_FORTRAN_IN_PLACE);
}

static int is_bottom(const void *p) {
	return p != NULL && (p == (void *)&mpi_fortran_bottom || p == (void *)&mpi_fortran_bottom_ ||
			     p == (void *)&mpi_fortran_bottom__ || p == (void *)&MPI_FORTRAN_BOTTOM);
}
#endif

#if defined(OPEN_MPI)
static void f_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
			MPI_Fint *comm, MPI_Fint *ierror) {
	MPI_Comm c = PMPI_Comm_f2c(*comm);
	MPI_Datatype t = PMPI_Type_f2c(*datatype);
	MPI_Op o = PMPI_Op_f2c(*op);
	if (is_in_place(sendbuf)) sendbuf = MPI_IN_PLACE;
	else if (is_bottom(sendbuf)) sendbuf = MPI_BOTTOM;
	if (is_bottom(recvbuf)) recvbuf = MPI_BOTTOM;
	int rc = dpml_allreduce_entry(sendbuf, recvbuf, (int)*count, t, o, c);
	if (ierror != NULL) *ierror = (MPI_Fint)rc;
}

#define F_ALLREDUCE(name)                                                                              \
	void name(void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *o, MPI_Fint *c, MPI_Fint *ierr); \
	void name(void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *o, MPI_Fint *c, MPI_Fint *ierr) { \
		f_allreduce(s, r, n, t, o, c, ierr);                                                   \
	}

F_ALLREDUCE(mpi_allreduce)
F_ALLREDUCE(mpi_allreduce_)
F_ALLREDUCE(mpi_allreduce__)
F_ALLREDUCE(MPI_ALLREDUCE)
F_ALLREDUCE(mpi_allreduce_f08_)
#endif

#define F_FINALIZE(name)                  \
	void name(MPI_Fint *ierr);        \
	void name(MPI_Fint *ierr) {       \
		int rc = dpml_finalize_entry(); \
		if (ierr != NULL) *ierr = (MPI_Fint)rc; \
	}

#if defined(OPEN_MPI)
F_FINALIZE(mpi_finalize)
F_FINALIZE(mpi_finalize_)
F_FINALIZE(mpi_finalize__)
F_FINALIZE(MPI_FINALIZE)
#endif
F_FINALIZE(mpi_finalize_f08_)
