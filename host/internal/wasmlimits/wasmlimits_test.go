package wasmlimits_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/internal/testing/wasmtest"
)

// prefixed is a function body using the 0xfc and 0xfd prefixes as Go
// guests do (saturating conversions, memory.copy and memory.fill) and
// SIMD instructions with immediates.
var prefixed = []byte{
	0x43, 0, 0, 0, 0, 0xfc, 0x00, 0x1a, // f32.const 0; i32.trunc_sat_f32_s; drop
	0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 0x0a, 0, 0, // memory.copy
	0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 0x0b, 0, // memory.fill
	0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, // v128.const
	0xfd, 0x15, 3, 0x1a, // i8x16.extract_lane_s 3; drop
	0x41, 0, 0xfd, 0x00, 4, 0, 0x1a, // v128.load; drop
	0x02, 0x40, 0x03, 0x40, 0x41, 0, 0x0d, 1, 0x0b, 0x0b, // block loop i32.const 0 br_if 1 end end
	0x41, 0, 0x0e, 2, 0, 0, 0, // br_table 0 0 0
	0x0b,
}

func TestMeasureShaped(t *testing.T) {
	for _, tc := range []struct {
		shape wasmtest.Shape
		check func(wasmlimits.Shape) bool
	}{
		{wasmtest.Shape{Nesting: 1000}, func(s wasmlimits.Shape) bool { return s.Nesting == 1000 && s.ControlOps == 1000 && s.NestingAt == 4 }},
		{wasmtest.Shape{Functions: 3, Branches: 50}, func(s wasmlimits.Shape) bool { return s.Functions == 7 && s.ControlOps == 100 && s.Nesting == 1 }},
		{wasmtest.Shape{Functions: 2, Locals: 300, BodyOps: 10}, func(s wasmlimits.Shape) bool { return s.Locals == 300 && s.LocalsAt == 4 }},
		{wasmtest.Shape{Types: 5, TypeValues: 9}, func(s wasmlimits.Shape) bool { return s.Types == 9 && s.TypeValues == 9 && s.TypeValuesAt == 4 }},
		{wasmtest.Shape{Globals: 7}, func(s wasmlimits.Shape) bool { return s.Globals == 7 }},
		{wasmtest.Shape{TableMin: 5000}, func(s wasmlimits.Shape) bool { return s.TableElements == 5000 }},
		{wasmtest.Shape{DataSegments: 40}, func(s wasmlimits.Shape) bool { return s.DataSegments == 41 }},
		{wasmtest.Shape{ElementSegments: 6}, func(s wasmlimits.Shape) bool { return s.ElementSegments == 6 && s.Elements == 6 }},
		{wasmtest.Shape{Raw: prefixed}, func(s wasmlimits.Shape) bool { return s.Nesting == 2 && s.ControlOps == 4 }},
	} {
		wasm := wasmtest.Shaped(tc.shape)
		s, err := wasmlimits.Measure(wasm)
		if err != nil || !tc.check(s) {
			t.Errorf("%+v: measured %+v, %v", tc.shape, s, err)
		}
		compiles(t, wasm)
	}
}

// compiles fails the test if wazero does not compile wasm.
func compiles(t *testing.T, wasm []byte) {
	t.Helper()
	if err := engineCompile(wasm); err != nil {
		t.Errorf("wazero does not compile the module: %v", err)
	}
}

// engineCompile compiles wasm with the engine (wazero, on one goroutine,
// in a runtime of its own, no compilation cache). A module that compiles
// but is no skein module (these are not) is a success; a panic in wazero
// is an error (the engine turns it into one).
func engineCompile(wasm []byte) error {
	ctx := context.Background()
	e, err := engine.NewWazero(ctx, engine.Config{HostModule: abi.Module, MemoryLimitPages: 65536, NoMemoryImages: true})
	if err != nil {
		return err
	}
	defer e.Close(ctx)
	m, err := e.Compile(ctx, wasm, engine.CompileOptions{Workers: 1})
	var imp *engine.ImportError
	switch {
	case errors.As(err, &imp):
		return nil
	case err != nil:
		return err
	}
	return m.Close(ctx)
}

func TestCheckNamesTheLimit(t *testing.T) {
	wasm := wasmtest.Shaped(wasmtest.Shape{Nesting: 5000})
	_, err := wasmlimits.Check(wasm, wasmlimits.Limits{Nesting: 4096})
	var ee *wasmlimits.ExceededError
	if !errors.As(err, &ee) || ee.Limit != "Nesting" || err.Error() != "function 4 nests blocks 5000 deep (limit Nesting = 4096)" {
		t.Fatalf("got %v", err)
	}
	if _, err := wasmlimits.Check(wasm, wasmlimits.Limits{Nesting: 5000, ControlOps: 5000}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}

// TestValueTypes: the value types wazero's decoder accepts in a function
// type, exnref among them (found by fuzzing,
// testdata/fuzz/FuzzMeasure/27b7d7089c2d0fc6), are accepted.
func TestValueTypes(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00\x01\x0b\x02\x60\x01\x69\x00\x60\x02\x63\x70\x6f\x00")
	if _, err := wasmlimits.Measure(wasm); err != nil {
		t.Errorf("Measure: %v", err)
	}
	if !wazeroCompiles(wasm) {
		t.Error("wazero does not compile it")
	}
}

func TestUnknownOpcodes(t *testing.T) {
	for _, tc := range []struct {
		body []byte
		want string
	}{
		{[]byte{0x06, 0x40, 0x0b, 0x0b}, "unknown or unsupported opcode 0x06 (exception handling, which skein does not enable)"},
		{[]byte{0x41, 0, 0xfe, 0x10, 2, 0, 0x1a, 0x0b}, "unknown or unsupported opcode 0xfe (threads, which skein does not enable)"},
		{[]byte{0x12, 0, 0x0b}, "tail calls"},
		{[]byte{0xfc, 42, 0x0b}, "unknown opcode 0xfc 42"},
		{[]byte{0xfd, 0x9a, 0x01, 0x0b}, "unknown opcode 0xfd 154"},
		{[]byte{0xfd, 0x80, 0x02, 0x0b}, "unknown opcode 0xfd 256"},
		{[]byte{0xc5, 0x0b}, "unknown or unsupported opcode 0xc5"},
	} {
		_, err := wasmlimits.Measure(wasmtest.Shaped(wasmtest.Shape{Raw: tc.body}))
		var fe *wasmlimits.FormatError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "function 4") {
			t.Errorf("body % x: got %v, want a FormatError with %q", tc.body, err, tc.want)
		}
	}
}

// TestForgedCounts: counts that announce more than the module holds cost
// nothing: four billion locals in a few bytes are counted, not allocated,
// and a vector longer than its section is malformed.
func TestForgedCounts(t *testing.T) {
	locals := wasmtest.Shaped(wasmtest.Shape{Raw: []byte{0x0b}})
	// Patch the raw function's "no locals" into 1 group of 0xffffffff i32.
	i := strings.LastIndex(string(locals), "\x02\x00\x0b")
	if i < 0 {
		t.Fatal("raw body not found")
	}
	forged := append(append(append([]byte{}, locals[:i]...), 0x08, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f, 0x0b), locals[i+3:]...)
	forged = fixCodeSize(t, forged, len(locals[i:])-len(forged[i:]))
	allocs := testing.AllocsPerRun(5, func() {
		s, err := wasmlimits.Measure(forged)
		if err != nil || s.Locals != 1<<32-1 {
			t.Fatalf("measured %+v, %v", s, err)
		}
	})
	plain := testing.AllocsPerRun(5, func() { wasmlimits.Measure(locals) })
	if allocs > plain {
		t.Errorf("Measure made %v allocations for four billion locals, %v for none", allocs, plain)
	}
	types := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 1, 5, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := wasmlimits.Measure(types); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("forged type count: %v", err)
	}
	// A truncated import section announcing 238 million imports: wazero
	// 1.12 allocates for them (26 GB) before it finds the end.
	imports := []byte("\x00asm\x01\x00\x00\x00\x02d\xb0\x90\xec\xf1\x000")
	if _, err := wasmlimits.Measure(imports); err == nil || !strings.Contains(err.Error(), "malformed section list: at byte 10: unexpected end: 100 bytes announced, 6 left") {
		t.Errorf("forged import count: %v", err)
	}
}

// fixCodeSize adjusts the size of the code section (the section with id
// 10) of wasm by -delta bytes.
func fixCodeSize(t *testing.T, wasm []byte, delta int) []byte {
	t.Helper()
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n := uvarint(wasm[i+1:])
		if id == 10 {
			out := append([]byte{}, wasm[:i+1]...)
			out = appendUvarint(out, uint64(int(size)-delta))
			return append(out, wasm[i+1+n:]...)
		}
		i += 1 + n + int(size)
	}
	t.Fatal("no code section")
	return nil
}

func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// FuzzMeasure: Measure never panics on any input. (It is not checked
// against wazero here: wazero's decoder allocates by the counts a module
// announces, and 16 bytes announcing 238 million imports make it die of
// "out of memory"; see TestForgedCounts. FuzzMeasureCode compares the
// two on well-formed sections.)
func FuzzMeasure(f *testing.F) {
	f.Add(wasmtest.Shaped(wasmtest.Shape{Raw: prefixed}))
	f.Add(wasmtest.Shaped(wasmtest.Shape{Nesting: 20, Functions: 2, BodyOps: 3, Globals: 2, TableMin: 3, ElementSegments: 1, DataSegments: 2}))
	f.Add(wasmtest.Shaped(wasmtest.Shape{Types: 2, TypeValues: 3, Pad: 4}))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		wasmlimits.Measure(wasm)
	})
}

// FuzzMeasureCode: Measure accepts every function body wazero compiles,
// so it refuses no valid module for how it decodes instructions.
func FuzzMeasureCode(f *testing.F) {
	f.Add(prefixed)
	f.Add([]byte{0x02, 0x40, 0x41, 0, 0x04, 0x7f, 0x41, 1, 0x05, 0x41, 2, 0x0b, 0x1a, 0x0b, 0x0b})
	f.Add([]byte{0x41, 0, 0x41, 0, 0x1c, 1, 0x7f, 0x1a, 0xd0, 0x70, 0xd1, 0x1a, 0x0b})
	f.Fuzz(func(t *testing.T, body []byte) {
		wasm := wasmtest.Shaped(wasmtest.Shape{Raw: body, TableMin: 2})
		if _, err := wasmlimits.Measure(wasm); err != nil && wazeroCompiles(wasm) {
			t.Fatalf("Measure refuses a module wazero compiles: %v", err)
		}
	})
}

// wazeroCompiles reports whether wazero compiles wasm; a panic in wazero
// (it has some on invalid modules: testdata/fuzz) counts as no.
func wazeroCompiles(wasm []byte) bool { return engineCompile(wasm) == nil }

// TestTypeIndexChecked: a function whose type index names no type is
// malformed. wazero 1.12 panics validating a call to such a function
// (found by fuzzing, testdata/fuzz/FuzzMeasure/30c920f41ba3488f).
func TestTypeIndexChecked(t *testing.T) {
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // one type () -> ()
		3, 3, 2, 0, 7, // two functions: type 0, type 7
		10, 9, 2, 4, 0, 0x10, 1, 0x0b, 2, 0, 0x0b} // function 0 calls function 1
	_, err := wasmlimits.Measure(wasm)
	if err == nil || !strings.Contains(err.Error(), "malformed function section, function 1: at byte 19: type index 7, but the module declares 1 types") {
		t.Errorf("got %v", err)
	}
	if wazeroCompiles(wasm) {
		t.Error("wazero compiles it")
	}
}

// TestStateWrites: the instructions that change an instance's tables or
// segments are found; memory and global writes (Go guests' own) are not
// state writes.
func TestStateWrites(t *testing.T) {
	for _, tc := range []struct {
		body []byte
		want bool
	}{
		{prefixed, false},
		{[]byte{0x41, 0, 0x24, 0, 0x0b}, false},                         // global.set
		{[]byte{0x41, 0, 0xd0, 0x70, 0x26, 0, 0x0b}, true},              // table.set
		{[]byte{0xd0, 0x70, 0x41, 1, 0xfc, 15, 0, 0x1a, 0x0b}, true},    // table.grow
		{[]byte{0x41, 0, 0xd0, 0x70, 0x41, 1, 0xfc, 17, 0, 0x0b}, true}, // table.fill
		{[]byte{0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 14, 0, 0, 0x0b}, true}, // table.copy
		{[]byte{0x41, 0, 0x41, 0, 0x41, 0, 0xfc, 12, 0, 0, 0x0b}, true}, // table.init
		{[]byte{0xfc, 13, 0, 0x0b}, true},                               // elem.drop
		{[]byte{0xfc, 9, 0, 0x0b}, true},                                // data.drop
		{[]byte{0xfc, 16, 0, 0x1a, 0x0b}, false},                        // table.size
	} {
		s, err := wasmlimits.Measure(wasmtest.Shaped(wasmtest.Shape{Raw: tc.body, TableMin: 1, Globals: 1}))
		if err != nil || s.StateWrites != tc.want {
			t.Errorf("body % x: StateWrites %v (%v), want %v", tc.body, s.StateWrites, err, tc.want)
		}
	}
}

// TestGlobalIndexChecked: an instruction naming a global the module does
// not have is malformed (the engine appends globals of its own to a
// module, which such an index would otherwise reach).
func TestGlobalIndexChecked(t *testing.T) {
	for _, body := range [][]byte{
		{0x23, 2, 0x1a, 0x0b},             // global.get 2 of 2
		{0x41, 0, 0x24, 2, 0x0b},          // global.set 2 of 2
		{0x41, 0, 0x24, 0x80, 0x01, 0x0b}, // global.set 128
	} {
		wasm := wasmtest.Shaped(wasmtest.Shape{Raw: body, Globals: 2})
		_, err := wasmlimits.Measure(wasm)
		if err == nil || !strings.Contains(err.Error(), "but the module has 2 globals") {
			t.Errorf("body % x: %v; want a malformed global index", body, err)
		}
		if wazeroCompiles(wasm) {
			t.Errorf("body % x: wazero compiles it", body)
		}
	}
	if _, err := wasmlimits.Measure(wasmtest.Shaped(wasmtest.Shape{Raw: []byte{0x23, 1, 0x1a, 0x0b}, Globals: 2})); err != nil {
		t.Errorf("global.get 1 of 2: %v", err)
	}
}
