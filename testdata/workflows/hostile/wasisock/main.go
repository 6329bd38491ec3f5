// Command wasisock imports a WASI socket function wazero does not
// provide (sock_open, a WasmEdge extension); deploying it must fail.
package main

//go:wasmimport skein hello
func hello(version uint32) uint32

//go:wasmimport wasi_snapshot_preview1 sock_open
func sockOpen(family, kind uint32, fd uint32) uint32

func main() {
	hello(1)
	sockOpen(1, 1, 0)
}
