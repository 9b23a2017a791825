package config

// Deferred setup (DPML_SETUP_AFTER): a communicator runs its first calls on
// the MPI library and is set up once those calls would have taken
// SetupAfter there, each priced at SetupPriceCall plus SetupPriceByte per
// byte. The price depends only on the calls' sizes, which MPI requires to
// be equal on all ranks, so every rank sets up on the same call. The
// drop-in library's C layer and dpml.New's Deferred option both price
// calls with these constants (libdpml.so hands them to its C layer at
// start), so a communicator is set up on the same call whichever way it
// is driven.
const (
	SetupPriceCall = 5e-6 // seconds per call: a small MPI_Allreduce on one node
	SetupPriceByte = 1e-9 // seconds per byte: about 1 GB/s of reduction
)

// SetupPrice is what a call of bytes is priced at towards SetupAfter, in
// seconds.
func SetupPrice(bytes int64) float64 { return SetupPriceCall + float64(bytes)*SetupPriceByte }
