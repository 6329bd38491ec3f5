//go:build wasip1

package main

// skeinMain is the entry of this module built as a reactor
// (abi/README.md, "Start-up and snapshots"); a module that does not use
// the Go SDK exports it itself.
//
//lint:ignore U1000 called by the host: staticcheck does not see go:wasmexport
//go:wasmexport skein_main
func skeinMain() { main() }
