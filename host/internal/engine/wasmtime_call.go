//go:build wasmtime

package engine

/*
#include <stddef.h>
#include <stdint.h>

// wasmtime_call.c
extern void *skein_define(void *linker, const char *module, size_t module_len, const char *name, size_t name_len, void *ty, size_t fn);
extern uint8_t *skein_memory(void *cx, void *mem, size_t *size);
extern size_t skein_store_key(void *cx);
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wtHostFunc is a function a guest imports, host or WASI, as the
// trampoline (wasmtime_call.c) runs it: call reads its arguments from
// stack and writes its results there; false ends the instance (the
// reason is in the instance).
type wtHostFunc struct {
	name    string
	nparams int
	results []ValueType
	call    func(in *wtInstance, m *wtMemory, stack []uint64) bool
}

// The host functions of every engine of the process, by the number the
// trampoline gets, and the instances running, by their store.
var (
	wtFuncsMu sync.Mutex
	wtFuncs   atomic.Pointer[[]wtHostFunc]
	wtStores  sync.Map // store key (wasmtime-go's data of the store) → *wtInstance
)

// defineFunc defines f as module.name in linker, with type t.
func defineFunc(linker *wasmtime.Linker, module, name string, t FuncType, f wtHostFunc) error {
	wtFuncsMu.Lock()
	var fns []wtHostFunc
	if p := wtFuncs.Load(); p != nil {
		fns = *p
	}
	fns = append(fns[:len(fns):len(fns)], f)
	wtFuncs.Store(&fns)
	n := len(fns) - 1
	wtFuncsMu.Unlock()
	ft := wtFuncType(t)
	// The C pointers are the first fields of wasmtime.Linker and
	// wasmtime.FuncType.
	cstr := func(s string) *C.char { return (*C.char)(unsafe.Pointer(unsafe.StringData(s))) }
	if err := C.skein_define(*(*unsafe.Pointer)(unsafe.Pointer(linker)), cstr(module), C.size_t(len(module)), cstr(name), C.size_t(len(name)),
		*(*unsafe.Pointer)(unsafe.Pointer(ft)), C.size_t(n)); err != nil {
		return fmt.Errorf("defining %s.%s failed", module, name)
	}
	runtime.KeepAlive(linker)
	runtime.KeepAlive(ft)
	return nil
}

// storeKey is what the trampoline knows a store by.
func storeKey(st *wasmtime.Store) uintptr {
	return uintptr(C.skein_store_key(unsafe.Pointer(st.Context())))
}

// skeinHostCall runs host function fn for the instance of store: the
// trampoline's one call into Go. It returns nonzero to end the instance.
//
//export skeinHostCall
func skeinHostCall(fn C.size_t, store C.size_t, cx unsafe.Pointer, args unsafe.Pointer, n C.size_t) (stop C.int) {
	v, ok := wtStores.Load(uintptr(store))
	if !ok {
		return 1 // not a skein instance: cannot be
	}
	in := v.(*wtInstance)
	f := (*wtFuncs.Load())[fn]
	defer func() { // a panic must not cross the C frames
		if p := recover(); p != nil {
			in.err = fmt.Errorf("host function %s failed: %v", f.name, p)
			stop = 1
		}
	}()
	raw := unsafe.Slice((*[16]byte)(args), int(n)) // wasmtime_val_raw_t
	var buf [16]uint64
	stack := buf[:max(f.nparams, len(f.results))]
	for i := range f.nparams {
		stack[i] = le.Uint64(raw[i][:8])
	}
	in.view.buf = nil
	if in.mem != nil {
		var size C.size_t
		base := C.skein_memory(cx, unsafe.Pointer(in.mem), &size)
		in.view.buf = unsafe.Slice((*byte)(unsafe.Pointer(base)), int(size))
	}
	if !f.call(in, &in.view, stack) {
		return 1
	}
	for i, t := range f.results {
		if t == I64 {
			le.PutUint64(raw[i][:8], stack[i])
		} else {
			le.PutUint32(raw[i][:4], uint32(stack[i]))
		}
	}
	return 0
}

// hostFunc is f as the trampoline runs it: its error ends the instance.
func hostFunc(f HostFunc) wtHostFunc {
	call := f.Call
	return wtHostFunc{name: f.Name, nparams: len(f.Type.Params), results: f.Type.Results,
		call: func(in *wtInstance, m *wtMemory, stack []uint64) bool {
			// i32 arguments come with their high bits unspecified.
			for i, t := range f.Type.Params {
				if t == I32 {
					stack[i] = uint64(uint32(stack[i]))
				}
			}
			if err := call(in.ctx, m, stack); err != nil {
				in.err = err
				return false
			}
			return true
		}}
}
