// Command noworkflows speaks the ABI but registers no workflow; deploying
// it must fail.
package main

//go:wasmimport skein hello
func hello(version uint32) uint32

//go:wasmimport skein workflows
func workflows(ptr, n uint32)

//go:wasmimport skein invocation
func invocation(buf, capacity uint32) uint32

func main() {
	hello(1)
	workflows(0, 0)
	invocation(0, 0)
}
