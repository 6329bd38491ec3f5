package engine

import (
	"context"
	"runtime"

	"github.com/tetratelabs/wazero/experimental"
)

// withMemory returns ctx carrying the allocator of an instance's linear
// memory; the ctx is the one given to InstantiateModule. On Unix, unless
// slice is set, it is reserveMemory (memory_unix.go): the instance's
// whole memory limit is reserved as address space up front and pages are
// committed as the guest grows its memory, so a grow never moves or
// copies the memory, only the pages the guest touches become resident,
// and closing the instance returns them to the OS at once. Otherwise it
// is wazero's default, a Go byte slice that is copied into a larger one
// when the guest grows past its capacity (Config.SliceMemory; see
// docs/PERFORMANCE.md). img, if not nil, is the module's initial memory,
// which the module itself no longer writes (its data segments were split
// off when it was compiled).
func withMemory(ctx context.Context, img *memImage, slice bool) context.Context {
	return withMemoryOf(ctx, img, slice, nil)
}

// withMemoryOf is withMemory that also sets *got, if got is not nil, to
// the memory it gives an instance of img.
func withMemoryOf(ctx context.Context, img *memImage, slice bool, got *experimental.LinearMemory) context.Context {
	reserve := defaultWasmMemory != nil && !slice
	if img != nil {
		return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
			lm := imageMemory(img, capacity, max, reserve)
			if got != nil {
				*got = lm
			}
			return lm
		}))
	}
	if !reserve {
		return ctx
	}
	return experimental.WithMemoryAllocator(ctx, defaultWasmMemory)
}

// sliceMemory is a linear memory in a Go byte slice, grown by copying:
// the fallback when address space cannot be reserved.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size > uint64(cap(m.buf)) {
		m.buf = append(m.buf[:cap(m.buf)], make([]byte, size-uint64(cap(m.buf)))...)
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }

// copiedImage is a slice memory holding a copy of img.
func copiedImage(img *memImage, capacity, limit uint64) experimental.LinearMemory {
	m := &sliceMemory{max: limit}
	if buf := m.Reallocate(max(capacity, uint64(len(img.data)))); buf != nil {
		copy(buf, img.data)
	}
	runtime.KeepAlive(img) // img.data may be unmapped once img is unreachable
	return m
}
