package engine

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// TestMergeDataSegments: the merged module has few segments and its
// initial memory is byte for byte the original's.
func TestMergeDataSegments(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/bench"))
	if err != nil {
		t.Fatal(err)
	}
	merged := mergeDataSegments(wasm)
	orig, _ := parseDataOf(t, wasm)
	got, _ := parseDataOf(t, merged)
	t.Logf("%d segments -> %d; module %d -> %d bytes", orig, got, len(wasm), len(merged))
	if got >= orig || got > 100 {
		t.Fatalf("segments %d -> %d", orig, got)
	}
	if !bytes.Equal(initialMemory(t, wasm), initialMemory(t, merged)) {
		t.Fatal("initial memory differs")
	}
	if m2 := mergeDataSegments(merged); !bytes.Equal(m2, merged) {
		t.Fatal("merging twice changed the module")
	}
}

func parseDataOf(t *testing.T, wasm []byte) (int, []dataSegment) {
	t.Helper()
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n := uvarint(wasm[i+1:])
		i += 1 + n
		if id == 11 {
			segs, err := parseData(wasm[i : i+int(size)])
			if err != nil {
				t.Fatal(err)
			}
			return len(segs), segs
		}
		i += int(size)
	}
	t.Fatal("no data section")
	return 0, nil
}

// initialMemory instantiates the module without running it (no _start)
// and returns its memory.
func initialMemory(t *testing.T, wasm []byte) []byte {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter()) // compiles fast
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	// Provide stub imports so the module instantiates.
	for _, mod := range []string{"skein", "wasi_snapshot_preview1"} {
		b := rt.NewHostModuleBuilder(mod)
		for _, f := range cm.ImportedFunctions() {
			m, name, _ := f.Import()
			if m != mod {
				continue
			}
			b.NewFunctionBuilder().WithGoModuleFunction(noop{}, f.ParamTypes(), f.ResultTypes()).Export(name)
		}
		if _, err := b.Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := mod.Memory().Read(0, mod.Memory().Size())
	return bytes.Clone(buf)
}

type noop struct{}

func (noop) Call(context.Context, api.Module, []uint64) {}

// TestSplitData: the stripped module has no data, and the image plus
// zeros is byte for byte the original's initial memory, also when an
// instance maps it (the allocator of memory.go).
func TestSplitData(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/bench"))
	if err != nil {
		t.Fatal(err)
	}
	stripped, image, ok := splitData(wasm)
	if !ok {
		t.Fatal("splitData refused a Go module")
	}
	if n, _ := parseDataOf(t, stripped); n != 0 {
		t.Fatalf("stripped module has %d segments", n)
	}
	want := initialMemory(t, wasm)
	if len(image) > len(want) || !bytes.Equal(image, want[:len(image)]) || !bytes.Equal(want[len(image):], make([]byte, len(want)-len(image))) {
		t.Fatal("image differs from the initial memory")
	}
	img, err := newMemImage(image)
	if err != nil {
		t.Skipf("no copy-on-write images here: %v", err)
	}
	defer img.close()
	for range 2 { // a second instance sees the image, not the first one's writes
		m := imageMemory(img, uint64(len(want)), 1<<30, true)
		buf := m.Reallocate(uint64(len(want)))
		if !bytes.Equal(buf, want) {
			t.Fatal("mapped memory differs from the initial memory")
		}
		buf[0], buf[len(image)-1] = 0xff, 0xff
		m.Free()
	}
}
