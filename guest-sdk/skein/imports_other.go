//go:build !wasip1

package skein

import "unsafe"

// On other platforms the package compiles (so tools such as go vet can
// check workflow code) but cannot run: workflows run only inside the skein
// host, built with GOOS=wasip1 GOARCH=wasm.

const notWasm = "skein: workflow modules run only inside the skein host; build them with GOOS=wasip1 GOARCH=wasm"

func hostHello(uint32) uint32                      { panic(notWasm) }
func hostWorkflows(unsafe.Pointer, uint32)         { panic(notWasm) }
func hostInvocation(unsafe.Pointer, uint32) uint32 { panic(notWasm) }
func hostTake(unsafe.Pointer, uint32) uint32       { panic(notWasm) }
func hostNext(unsafe.Pointer, uint32) uint32       { panic(notWasm) }
func hostStepDone(uint32, uint32, uint32, unsafe.Pointer, uint32) uint32 {
	panic(notWasm)
}
func hostOp(uint32, uint32, unsafe.Pointer, uint32, unsafe.Pointer, uint32, unsafe.Pointer, uint32, unsafe.Pointer, uint32) uint32 {
	panic(notWasm)
}
func hostAwait(uint32, uint32, unsafe.Pointer, uint32) uint32                  { panic(notWasm) }
func hostSelect(uint32, unsafe.Pointer, uint32, unsafe.Pointer, uint32) uint32 { panic(notWasm) }
func hostTaskDone(uint32, uint32, unsafe.Pointer, uint32)                      { panic(notWasm) }
func hostBodySleep(uint32, int64)                                              { panic(notWasm) }
func hostRealNow() int64                                                       { panic(notWasm) }
func hostRealRand(unsafe.Pointer, uint32)                                      { panic(notWasm) }
func hostOutcomes(unsafe.Pointer, uint32) uint32                               { panic(notWasm) }
func hostOpOptions(uint32, unsafe.Pointer, uint32)                             { panic(notWasm) }
func hostCanceled(unsafe.Pointer, uint32) uint32                               { panic(notWasm) }
func hostContinue(uint32, unsafe.Pointer, uint32)                              { panic(notWasm) }
func hostInputSchema(unsafe.Pointer, uint32, unsafe.Pointer, uint32) uint32    { panic(notWasm) }
func hostFeed(uint32, uint32, unsafe.Pointer, uint32) uint32                   { panic(notWasm) }
