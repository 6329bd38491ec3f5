//go:build !unix

package host

import "github.com/tetratelabs/wazero/experimental"

// Without mmap, instances use wazero's default linear memory.
var defaultWasmMemory experimental.MemoryAllocator
