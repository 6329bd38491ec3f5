// Command abi2 claims to speak skein ABI v2; deploying it must fail.
package main

//go:wasmimport skein hello
func hello(version uint32) uint32

func main() { hello(2) }
