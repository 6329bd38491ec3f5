//go:build wasip1

package skein

import "unsafe"

// Host functions of ABI v1 (see abi/README.md).

//go:wasmimport skein hello
func hostHello(version uint32) uint32

//go:wasmimport skein workflows
func hostWorkflows(ptr unsafe.Pointer, n uint32)

//go:wasmimport skein invocation
func hostInvocation(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein take
func hostTake(buf unsafe.Pointer, n uint32) uint32

//go:wasmimport skein next
func hostNext(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein op
func hostOp(task, kind uint32, name unsafe.Pointer, nameLen uint32, fn unsafe.Pointer, fnLen uint32, arg unsafe.Pointer, argLen uint32, buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein step_done
func hostStepDone(task, promise, status uint32, ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport skein await
func hostAwait(task, promise uint32, buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein select
func hostSelect(task uint32, ptr unsafe.Pointer, n uint32, buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein task_done
func hostTaskDone(task, status uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport skein body_sleep
func hostBodySleep(task uint32, ns int64)

//go:wasmimport skein real_now
func hostRealNow() int64

//go:wasmimport skein real_rand
func hostRealRand(ptr unsafe.Pointer, n uint32)

//go:wasmimport skein outcomes
func hostOutcomes(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein op_options
func hostOpOptions(task uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport skein canceled
func hostCanceled(buf unsafe.Pointer, capacity uint32) uint32

//go:wasmimport skein continue_as_new
func hostContinue(task uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport skein input_schema
func hostInputSchema(workflow unsafe.Pointer, workflowLen uint32, schema unsafe.Pointer, schemaLen uint32) uint32

//go:wasmimport skein feed
func hostFeed(task, used uint32, buf unsafe.Pointer, capacity uint32) uint32
