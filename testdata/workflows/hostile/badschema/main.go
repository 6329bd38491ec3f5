// Command badschema announces workflow "a" and gives an input schema for
// workflow "b", which it did not announce: deploying it must fail.
package main

import "unsafe"

//go:wasmimport skein hello
func hello(version uint32) uint32

//go:wasmimport skein workflows
func workflows(ptr unsafe.Pointer, n uint32)

//go:wasmimport skein input_schema
func inputSchema(wf unsafe.Pointer, wfLen uint32, schema unsafe.Pointer, schemaLen uint32) uint32

//go:wasmimport skein invocation
func invocation(buf unsafe.Pointer, capacity uint32) uint32

func str(s string) (unsafe.Pointer, uint32) {
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

func main() {
	hello(1)
	workflows(str("a"))
	wf, n := str("b")
	s, m := str(`{"type":"integer"}`)
	inputSchema(wf, n, s, m)
	var buf [64]byte
	invocation(unsafe.Pointer(&buf[0]), uint32(len(buf)))
}
