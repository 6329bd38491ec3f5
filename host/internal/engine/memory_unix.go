//go:build unix

package engine

import (
	"math"
	"os"
	"sync"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

var defaultWasmMemory experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(reserveMemory)

var osPageSize = uint64(os.Getpagesize())

// reserveMemory reserves max bytes of address space with no access (no
// RSS and no commit charge) and returns a linear memory that commits pages
// on demand. If the reservation fails it falls back to a Go slice.
func reserveMemory(capacity, max uint64) experimental.LinearMemory {
	size := roundUp(max, osPageSize)
	if size == 0 || size > math.MaxInt {
		return &sliceMemory{max: max}
	}
	b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return &sliceMemory{max: max}
	}
	return &reservedMemory{buf: b[:0], max: max}
}

// reservedMemory is a reserve-then-commit linear memory: len(buf) bytes
// are committed (readable and writable), cap(buf) bytes are reserved.
// wazero calls Reallocate only from the goroutine that runs the instance;
// the mutex keeps Free after a trap safe all the same.
type reservedMemory struct {
	mu      sync.Mutex
	buf     []byte
	max     uint64
	scratch resetScratch // for remap
}

// Reallocate commits memory up to size bytes and returns the memory; it
// never moves. It returns nil (the guest's memory.grow fails) beyond max
// or if the OS refuses to commit.
func (m *reservedMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if size > m.max || cap(m.buf) == 0 {
		return nil
	}
	if committed := uint64(len(m.buf)); size > committed {
		end := roundUp(size, osPageSize)
		if err := syscall.Mprotect(m.buf[committed:end], syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
			return nil
		}
		m.buf = m.buf[:end]
	}
	// Capacity stops at what is committed: the bytes after it fault.
	return m.buf[:size:len(m.buf)]
}

// Free unmaps the whole reservation.
func (m *reservedMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cap(m.buf) > 0 {
		_ = syscall.Munmap(m.buf[:cap(m.buf)]) // a mapping of ours: munmap fails only on bad arguments
	}
	m.buf = nil
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// imageMemory returns a linear memory that starts with img: mapped
// copy-on-write into a reservation, or copied when it cannot be.
func imageMemory(img *memImage, capacity, max uint64, reserve bool) experimental.LinearMemory {
	if reserve {
		if m, ok := reserveMemory(capacity, max).(*reservedMemory); ok {
			if err := img.mapInto(m.buf[:cap(m.buf)]); err == nil {
				m.buf = m.buf[:img.size]
				return m
			}
			m.Free()
		}
	}
	return copiedImage(img, capacity, max)
}

// mapped reports whether lm, a memory imageMemory returned, maps its
// image (else it holds a copy).
func mapped(lm experimental.LinearMemory) bool {
	_, ok := lm.(*reservedMemory)
	return ok
}

// remap gives the memory img's contents again, when the memory is img's
// size (it never grew past it): it copies the image over the pages
// written since (restoreWritten) or, where the page map cannot be read,
// maps the image over the memory again.
func (m *reservedMemory) remap(img *memImage) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if uint64(len(m.buf)) != img.size {
		return false
	}
	if img.restoreWritten(m.buf, &m.scratch) {
		return true
	}
	return img.mapInto(m.buf[:cap(m.buf)]) == nil
}
