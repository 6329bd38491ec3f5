// Command initspin loops forever in its package initialisation, before
// it calls the host at all: deploying it must fail with the limit on
// time without yielding, whether it is built as a command (the watchdog
// stops the loop) or as a reactor (the host's run of _initialize for the
// snapshot is bounded by the same limit).
package main

//go:wasmimport skein hello
func hello(version uint32) uint32

//lint:ignore U1000 written, never read: a global the compiler cannot drop the loop over
var n uint64

func init() {
	for {
		n++
	}
}

func main() { hello(1) }
