//go:build wasmtime

package engine

/*
#include <stdint.h>
#include <stdlib.h>

// The declarations of wasmtime's C API used here (wasmtime/store.h,
// wasmtime/error.h); github.com/bytecodealliance/wasmtime-go links the
// library.
typedef struct wasmtime_error wasmtime_error_t;
typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_context wasmtime_context_t;
extern wasmtime_error_t *wasmtime_error_new(const char *);
extern void wasmtime_store_epoch_deadline_callback(wasmtime_store_t *store,
	wasmtime_error_t *(*func)(wasmtime_context_t *, void *, uint64_t *, uint8_t *),
	void *data, void (*finalizer)(void *));

// skein_epoch runs when the engine's epoch passes a store's deadline: it
// ends the store's guest if its flag is set, else lets it run to the
// next epoch.
static wasmtime_error_t *skein_epoch(wasmtime_context_t *cx, void *data, uint64_t *delta, uint8_t *kind) {
	if (__atomic_load_n((int32_t *)data, __ATOMIC_SEQ_CST)) {
		return wasmtime_error_new("skein: interrupted");
	}
	*delta = 1;
	*kind = 0; // WASMTIME_UPDATE_DEADLINE_CONTINUE
	return NULL;
}

static int32_t *skein_epoch_callback(void *store) {
	int32_t *flag = calloc(1, sizeof(int32_t));
	if (flag != NULL) {
		wasmtime_store_epoch_deadline_callback((wasmtime_store_t *)store, skein_epoch, flag, free);
	}
	return flag;
}
*/
import "C"

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// interrupter stops one store's guest: it sets the store's flag and
// moves the engine's epoch. wasmtime checks the epoch at function entries
// and loop headers (a load and a compare); the epoch moves only when a
// guest is to stop, and then every running store calls its callback
// once: the one whose flag is set traps, the others go on.
type interrupter struct {
	flag  *int32 // C memory, freed with the store
	fired atomic.Bool
}

// newInterrupter registers st's epoch callback; nil when it could not.
func newInterrupter(st *wasmtime.Store) *interrupter {
	// The store's C pointer is the first field of wasmtime.Store.
	flag := C.skein_epoch_callback(*(*unsafe.Pointer)(unsafe.Pointer(st)))
	if flag == nil {
		return nil
	}
	st.SetEpochDeadline(1)
	return &interrupter{flag: (*int32)(unsafe.Pointer(flag))}
}

// interrupt stops the guest; the engine must not be closed.
func (i *interrupter) interrupt(eng *wasmtime.Engine) {
	i.fired.Store(true)
	atomic.StoreInt32(i.flag, 1)
	eng.IncrementEpoch()
}

// onDone makes the end of ctx interrupt the guest. The returned func
// must be called before the store is closed: it returns once no
// interrupt is under way.
func (i *interrupter) onDone(ctx context.Context, eng *wasmtime.Engine) (stop func()) {
	done := make(chan struct{})
	cancel := context.AfterFunc(ctx, func() {
		defer close(done)
		i.interrupt(eng)
	})
	return func() {
		if !cancel() {
			<-done // the flag lives as long as the store
		}
	}
}
