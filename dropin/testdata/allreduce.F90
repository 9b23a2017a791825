! allreduce.F90: the Fortran side of the drop-in test, compiled three times:
! with mpif.h (no macro), with `use mpi` (-DUSEMPI) and with `use mpi_f08`
! (-DF08). Every rank checks its results against values it computes itself
! ("FAIL" lines, exit code 1) and prints "case" lines that must be identical
! with and without LD_PRELOAD=libdpml.so. Data are small integers, so the
! floating-point results are exact. Arguments: the number of communicators
! of the dup/split/free loop, and a directory to write each rank's lines to
! (DIR/rank-N.txt) instead of stdout.
program allreduce_f
#if defined(F08)
  use mpi_f08
#elif defined(USEMPI)
  use mpi
#endif
  implicit none
#if !defined(F08) && !defined(USEMPI)
  include 'mpif.h'
#endif
#if defined(F08)
#define COMM_T type(MPI_Comm)
#else
#define COMM_T integer
#endif
  integer, parameter :: n = 1000
  COMM_T :: sub, c
  integer :: ierr, rank, nprocs, i, q, it, loops, fails, srank, ssize
  integer :: u
  character(len=4096) :: arg, dir
  integer :: ia(n), ib(n), iw(n)
  integer(kind=8) :: lb(n), lw(n)
  real :: ra(n), rb(n), rw(n)
  double precision :: db(n), dw(n)
  complex :: ca(n), cb(n), cw(n)
  double complex :: za(n), zb(n), zw(n)
  logical :: ga(n), gb(n), gw(n)

  fails = 0
  loops = 100
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) loops
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  u = 6
  if (command_argument_count() >= 2) then
    call get_command_argument(2, dir)
    write (arg, '(i0)') rank
    u = 10
    open (unit=u, file=trim(dir) // '/rank-' // trim(arg) // '.txt', status='replace', action='write')
  end if

  ! INTEGER, SUM
  do i = 1, n
    ia(i) = ival(i, rank)
    iw(i) = 0
    do q = 0, nprocs - 1
      iw(i) = iw(i) + ival(i, q)
    end do
  end do
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checki('integer-sum', ib, iw)

  ! INTEGER, MAX, in place
  do i = 1, n
    ib(i) = ival(i * 3, rank)
    iw(i) = ival(i * 3, 0)
    do q = 1, nprocs - 1
      iw(i) = max(iw(i), ival(i * 3, q))
    end do
  end do
  call MPI_Allreduce(MPI_IN_PLACE, ib, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call checki('integer-max-inplace', ib, iw)

  ! INTEGER, BXOR
  do i = 1, n
    ia(i) = ieor(i * 7919, rank * 104729)
    iw(i) = 0
    do q = 0, nprocs - 1
      iw(i) = ieor(iw(i), ieor(i * 7919, q * 104729))
    end do
  end do
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_BXOR, MPI_COMM_WORLD, ierr)
  call checki('integer-bxor', ib, iw)

  ! INTEGER*8, MIN, in place
  do i = 1, n
    lb(i) = int(ival(i, rank), 8) * 100000000_8
    lw(i) = int(ival(i, 0), 8) * 100000000_8
    do q = 1, nprocs - 1
      lw(i) = min(lw(i), int(ival(i, q), 8) * 100000000_8)
    end do
  end do
  call MPI_Allreduce(MPI_IN_PLACE, lb, n, MPI_INTEGER8, MPI_MIN, MPI_COMM_WORLD, ierr)
  call checkl('integer8-min-inplace', lb, lw)

  ! REAL, SUM
  do i = 1, n
    ra(i) = real(ival(i, rank))
    rw(i) = 0
    do q = 0, nprocs - 1
      rw(i) = rw(i) + real(ival(i, q))
    end do
  end do
  call MPI_Allreduce(ra, rb, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkd('real-sum', dble(rb), dble(rw))

  ! DOUBLE PRECISION, PROD, in place
  do i = 1, n
    db(i) = dble(mod(i + rank, 3) + 1)
    dw(i) = 1
    do q = 0, nprocs - 1
      dw(i) = dw(i) * dble(mod(i + q, 3) + 1)
    end do
  end do
  call MPI_Allreduce(MPI_IN_PLACE, db, n, MPI_DOUBLE_PRECISION, MPI_PROD, MPI_COMM_WORLD, ierr)
  call checkd('double-prod-inplace', db, dw)

  ! COMPLEX, SUM
  do i = 1, n
    ca(i) = cmplx(ival(i, rank), ival(i * 5, rank))
    cw(i) = 0
    do q = 0, nprocs - 1
      cw(i) = cw(i) + cmplx(ival(i, q), ival(i * 5, q))
    end do
  end do
  call MPI_Allreduce(ca, cb, n, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkd('complex-sum', dble(real(cb)) + 1000 * dble(aimag(cb)), dble(real(cw)) + 1000 * dble(aimag(cw)))

  ! DOUBLE COMPLEX, SUM, in place
  do i = 1, n
    zb(i) = dcmplx(ival(i, rank), -ival(i, rank))
    zw(i) = 0
    do q = 0, nprocs - 1
      zw(i) = zw(i) + dcmplx(ival(i, q), -ival(i, q))
    end do
  end do
  call MPI_Allreduce(MPI_IN_PLACE, zb, n, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkd('dcomplex-sum-inplace', dble(zb) + 1000 * aimag(zb), dble(zw) + 1000 * aimag(zw))

  ! LOGICAL, LAND: not an arithmetic type, passes through to MPI
  do i = 1, n
    ga(i) = mod(i + rank, 5) /= 0
    gw(i) = .true.
    do q = 0, nprocs - 1
      gw(i) = gw(i) .and. mod(i + q, 5) /= 0
    end do
  end do
  call MPI_Allreduce(ga, gb, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  do i = 1, n
    ib(i) = merge(1, 0, gb(i))
    iw(i) = merge(1, 0, gw(i))
  end do
  call checki('logical-land', ib, iw)

  ! MPI_COMM_SELF
  do i = 1, n
    ia(i) = ival(i, rank)
  end do
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_SELF, ierr)
  call checki('self-sum', ib, ia)

  ! Communicators created and freed in a loop: node-local splits (ranks
  ! 2k, 2k+1) and duplicates of World.
  do it = 1, loops
    if (mod(it, 2) == 0) then
      call MPI_Comm_dup(MPI_COMM_WORLD, c, ierr)
    else
      call MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, c, ierr)
    end if
    call MPI_Comm_rank(c, srank, ierr)
    call MPI_Comm_size(c, ssize, ierr)
    do i = 1, n
      db(i) = dble(ival(i + it, srank))
      dw(i) = 0
      do q = 0, ssize - 1
        dw(i) = dw(i) + dble(ival(i + it, q))
      end do
    end do
    call MPI_Allreduce(MPI_IN_PLACE, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, c, ierr)
    if (any(db /= dw)) then
      write (u, '(a,i0,a,i0)') 'FAIL rank ', rank, ': loop iteration ', it
      fails = fails + 1
    end if
    call MPI_Comm_free(c, ierr)
  end do
  write (u, '(a,i0,a,i0)') 'case fortran loop rank ', rank, ' n ', loops

  ! A split kept to the end (freed by MPI_Finalize's clean-up path: not
  ! freed at all).
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  do i = 1, n
    ia(i) = ival(i, rank)
  end do
  call MPI_Allreduce(ia, ib, n, MPI_INTEGER, MPI_SUM, sub, ierr)
  write (u, '(a,i0,a,i0)') 'case fortran split-sum rank ', rank, ' checksum ', sum(int(ib, 8) * [(int(i, 8), i = 1, n)])

  if (u /= 6) close (u)
  call MPI_Finalize(ierr)
  if (fails > 0) stop 1

contains

  integer function ival(i, r)
    integer, intent(in) :: i, r
    ival = mod(i * 7 + r * 3, 11) - 5
  end function

  subroutine checki(label, got, want)
    character(len=*), intent(in) :: label
    integer, intent(in) :: got(:), want(:)
    if (any(got /= want)) then
      write (u, '(a,i0,a,a)') 'FAIL rank ', rank, ': ', label
      fails = fails + 1
    end if
    write (u, '(a,a,a,i0,a,i0)') 'case fortran ', label, ' rank ', rank, ' checksum ', &
      sum(int(got, 8) * [(int(i, 8), i = 1, size(got))])
  end subroutine

  subroutine checkl(label, got, want)
    character(len=*), intent(in) :: label
    integer(kind=8), intent(in) :: got(:), want(:)
    if (any(got /= want)) then
      write (u, '(a,i0,a,a)') 'FAIL rank ', rank, ': ', label
      fails = fails + 1
    end if
    write (u, '(a,a,a,i0,a,i0)') 'case fortran ', label, ' rank ', rank, ' checksum ', sum(got / 1000)
  end subroutine

  subroutine checkd(label, got, want)
    character(len=*), intent(in) :: label
    double precision, intent(in) :: got(:), want(:)
    if (any(got /= want)) then
      write (u, '(a,i0,a,a)') 'FAIL rank ', rank, ': ', label
      fails = fails + 1
    end if
    write (u, '(a,a,a,i0,a,i0)') 'case fortran ', label, ' rank ', rank, ' checksum ', &
      sum(nint(got, 8) * [(int(i, 8), i = 1, size(got))])
  end subroutine

end program
