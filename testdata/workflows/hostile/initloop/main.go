// Command initloop says hello and then loops forever before announcing
// its workflows: deploying it must fail (the watchdog stops the loop).
package main

//go:wasmimport skein hello
func hello(version uint32) uint32

//lint:ignore U1000 written, never read: a global the compiler cannot drop the loop over
var n uint64

func main() {
	hello(1)
	for {
		n++
	}
}
