//go:build wasmtime

// The host functions' trampoline on wasmtime: one C function for all of
// them, which calls into Go once per call (skeinHostCall) with the raw
// arguments, instead of wasmtime-go's per-argument conversions. The
// declarations are those of wasmtime's C API (wasmtime/func.h, linker.h,
// memory.h, store.h, trap.h); github.com/bytecodealliance/wasmtime-go
// links the library.

#include <stddef.h>
#include <stdint.h>
#include "_cgo_export.h"

typedef struct wasmtime_caller wasmtime_caller_t;
typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasm_trap_t wasm_trap_t;
typedef struct wasmtime_error wasmtime_error_t;

extern wasmtime_context_t *wasmtime_caller_context(wasmtime_caller_t *);
extern void *wasmtime_context_get_data(const wasmtime_context_t *);
extern uint8_t *wasmtime_memory_data(const wasmtime_context_t *, const void *);
extern size_t wasmtime_memory_data_size(const wasmtime_context_t *, const void *);
extern wasm_trap_t *wasmtime_trap_new(const char *, size_t);
extern wasmtime_error_t *wasmtime_linker_define_func_unchecked(void *linker,
	const char *module, size_t module_len, const char *name, size_t name_len, const void *ty,
	wasm_trap_t *(*cb)(void *, wasmtime_caller_t *, void *, size_t), void *data, void (*finalizer)(void *));

static const char stopped[] = "skein: the host ended the instance";

// skein_trampoline runs host function number env; a nonzero answer
// from Go ends the instance with a trap (Go keeps the reason).
static wasm_trap_t *skein_trampoline(void *env, wasmtime_caller_t *caller, void *args, size_t n) {
	wasmtime_context_t *cx = wasmtime_caller_context(caller);
	size_t store = (size_t)wasmtime_context_get_data(cx);
	if (skeinHostCall((size_t)env, store, cx, args, n) == 0) {
		return NULL;
	}
	return wasmtime_trap_new(stopped, sizeof(stopped) - 1);
}

void *skein_define(void *linker, const char *module, size_t module_len, const char *name, size_t name_len, void *ty, size_t fn) {
	return wasmtime_linker_define_func_unchecked(linker, module, module_len, name, name_len, ty, skein_trampoline, (void *)fn, NULL);
}

uint8_t *skein_memory(void *cx, void *mem, size_t *size) {
	*size = wasmtime_memory_data_size(cx, mem);
	return wasmtime_memory_data(cx, mem);
}

size_t skein_store_key(void *cx) {
	return (size_t)wasmtime_context_get_data(cx);
}
