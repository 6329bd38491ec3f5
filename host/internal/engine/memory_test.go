package engine

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// growModule is a module with one memory (1 page, at most 3200 = 200 MiB)
// and an export grow(pages) that grows the memory and writes the last
// byte of the new pages, as a guest's allocator would use them.
var growModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
	0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, // type 0: (i32) -> i32
	0x03, 0x02, 0x01, 0x00, // function 0 has type 0
	0x05, 0x05, 0x01, 0x01, 0x01, 0x80, 0x19, // memory: min 1, max 3200
	0x07, 0x08, 0x01, 0x04, 'g', 'r', 'o', 'w', 0x00, 0x00, // export "grow" = function 0
	0x0a, 0x1e, 0x01, 0x1c, // code: one body of 28 bytes
	0x01, 0x01, 0x7f, // one i32 local: old
	0x20, 0x00, 0x40, 0x00, 0x21, 0x01, // old = memory.grow(pages)
	0x20, 0x01, 0x20, 0x00, 0x6a, 0x41, 0x10, 0x74, 0x41, 0x01, 0x6b, // (old+pages)<<16 - 1
	0x41, 0x01, 0x3a, 0x00, 0x00, // i32.store8 1
	0x20, 0x01, 0x0b, // return old
}

// BenchmarkMemoryGrow grows a new instance's memory from 64 KiB to 200 MiB
// one page at a time per op, writing to each new page.
func BenchmarkMemoryGrow(b *testing.B) {
	for _, slice := range []bool{false, true} {
		name := "memory=reserve"
		if slice {
			name = "memory=go"
		}
		b.Run(name, func(b *testing.B) { benchmarkMemoryGrow(b, slice) })
	}
}

func benchmarkMemoryGrow(b *testing.B, slice bool) {
	{
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithMemoryLimitPages(4096))
		defer rt.Close(ctx)
		cm, err := rt.CompileModule(ctx, growModule)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			mod, err := rt.InstantiateModule(withMemory(ctx, nil, slice), cm, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				b.Fatal(err)
			}
			grow := mod.ExportedFunction("grow")
			for p := 1; p < 3200; p++ {
				res, err := grow.Call(ctx, 1)
				if err != nil || int32(api.DecodeI32(res[0])) != int32(p) {
					b.Fatalf("grow at %d pages: %v %v", p, res, err)
				}
			}
			mod.Close(ctx)
		}
	}
}

// TestWasmMemory checks the allocator of memory.go: memory grows in place
// and keeps its bytes, fails beyond its maximum, and frees once.
func TestWasmMemory(t *testing.T) {
	if defaultWasmMemory == nil {
		t.Skip("no reserve-then-commit allocator on this platform")
	}
	const page = 65536
	m := defaultWasmMemory.Allocate(page, 64*page)
	b := m.Reallocate(page)
	if len(b) != page {
		t.Fatalf("initial length %d", len(b))
	}
	b[0], b[page-1] = 1, 2
	b2 := m.Reallocate(10 * page)
	if len(b2) != 10*page || &b2[0] != &b[0] || b2[0] != 1 || b2[page-1] != 2 || b2[10*page-1] != 0 {
		t.Fatal("grow moved or changed the memory")
	}
	b2[10*page-1] = 3
	if m.Reallocate(65*page) != nil {
		t.Fatal("grew beyond the maximum")
	}
	m.Free()
	m.Free()
	if m.Reallocate(page) != nil {
		t.Fatal("grew after Free")
	}
}
