package tsc

const supported = true

// Read returns the time stamp counter (RDTSC): ticks at a constant rate
// where Usable, unordered with respect to the loads and stores around it.
func Read() uint64
