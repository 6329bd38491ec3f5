//go:build !unix

package engine

import "github.com/tetratelabs/wazero/experimental"

// Without mmap, instances use wazero's default linear memory.
var defaultWasmMemory experimental.MemoryAllocator

// imageMemory copies img into a new slice memory.
func imageMemory(img *memImage, capacity, max uint64, _ bool) experimental.LinearMemory {
	return copiedImage(img, capacity, max)
}

// mapped reports whether lm maps its image: never here.
func mapped(experimental.LinearMemory) bool { return false }
