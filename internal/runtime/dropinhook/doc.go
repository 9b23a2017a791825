// Package dropinhook carries the engine's entry points that only
// libdpml.so's C layer uses (package dropin), so that package dpml
// exports nothing for it. Package dpml sets the functions when it is
// initialized; the argument is a *dpml.Comm.
package dropinhook
