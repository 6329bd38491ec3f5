// Command noentry imports from the host but, built as a reactor, exports
// no skein_main: the host must refuse it at deploy with a message that
// says how to build a module it can run.
package main

//go:wasmimport skein hello
func hello(version uint32) uint32

func main() { hello(1) }
