package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

func section(id byte, content ...byte) wasmSection { return wasmSection{id: id, content: content} }

// A module whose _start spins in a loop without calls: type () -> (),
// one function, one page of memory, the exports, and the body
// "loop br 0 end".
var (
	secTypes    = section(1, 1, 0x60, 0, 0)
	secFuncs    = section(3, 1, 0)
	secMemory   = section(5, 1, 0, 1)
	secExports  = section(7, 2, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0)
	secSpin     = section(10, 1, 7, 0, 0x03, 0x40, 0x0c, 0, 0x0b, 0x0b)
	importGlobl = section(2, 1, 3, 'e', 'n', 'v', 1, 'g', 3, 0x7f, 0) // env.g: an immutable i32
	oneGlobal   = section(6, 1, 0x7f, 0, 0x41, 7, 0x0b)               // an immutable i32 = 7
)

// TestInterruptChecks: the rewritten module is valid, exports the flag as
// the global after every imported and defined one (sections added where
// missing, in order), and has one check per loop.
func TestInterruptChecks(t *testing.T) {
	cases := []struct {
		name     string
		wasm     []byte
		flag     uint32
		exported int
	}{
		{"no globals, no exports", wasmModule(secTypes, secFuncs, secMemory, section(10, 1, 5, 0, 0x03, 0x40, 0x0b, 0x0b)), 0, 1},
		{"an imported memory", wasmModule(secTypes, section(2, 1, 3, 'e', 'n', 'v', 1, 'm', 2, 0, 1), secFuncs, secSpin), 0, 1},
		{"exports", wasmModule(secTypes, secFuncs, secMemory, secExports, secSpin), 0, 3},
		{"an imported and a defined global", wasmModule(secTypes, importGlobl, secFuncs, secMemory, oneGlobal, secExports, secSpin), 2, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := addInterruptChecks(c.wasm, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The host hands over the original's measured loops: the same
			// module comes out.
			orig, _ := wasmlimits.Measure(c.wasm)
			if fromShape, err := addInterruptChecks(c.wasm, &orig); err != nil || !bytes.Equal(fromShape, out) {
				t.Errorf("rewritten with the measured loops: %v; not the module rewritten alone", err)
			}
			s, err := wasmlimits.Measure(out)
			if err != nil {
				t.Fatalf("the rewritten module is malformed: %v", err)
			}
			if s.Globals != int(c.flag)+2 || s.Exports != c.exported {
				t.Errorf("%d globals, %d exports; want %d, %d", s.Globals, s.Exports, c.flag+2, c.exported)
			}
			secs, _ := sectionsOf(out)
			var code []byte
			for _, sec := range secs {
				if sec.id == 10 {
					code = sec.content
				}
			}
			check := checkCode(c.flag)
			if l := s.Loops; len(l) != 1 || !bytes.Equal(code[l[0]:l[0]+len(check)], check) {
				t.Errorf("loops at %v; want one, whose body starts with %x", l, check)
			}
			rt := wazero.NewRuntime(context.Background())
			defer rt.Close(context.Background())
			if _, err := rt.CompileModule(context.Background(), out); err != nil {
				t.Fatalf("wazero refuses the rewritten module: %v", err)
			}
			for _, sec := range secs {
				if sec.id == 7 {
					if kinds, _ := exportKinds(sec.content); kinds[interruptExport] != 3 {
						t.Errorf("exports %v; want the global %s", kinds, interruptExport)
					}
				}
			}
		})
	}
}

// TestInterruptNoMemory: a module without a linear memory is refused.
func TestInterruptNoMemory(t *testing.T) {
	_, err := addInterruptChecks(wasmModule(secTypes, secFuncs, secSpin), nil)
	if err == nil || !strings.Contains(err.Error(), "no linear memory") {
		t.Fatalf("a module without memory: %v; want it refused", err)
	}
}

// TestInterruptSpin: a guest spinning in a loop without calls stops at
// once when its run's context ends, with wazero's own interrupt error,
// through the flag checks; and runs on until then.
func TestInterruptSpin(t *testing.T) {
	ctx := context.Background()
	e, err := New(ctx, Wazero, Config{HostModule: "env", MemoryLimitPages: 2, Interruptible: true,
		HostFuncs: []HostFunc{{Name: "tick", Type: FuncType{}, Call: func(context.Context, Memory, []uint64) error { return nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	// The host's import check wants an import of env: func 0 is env.tick,
	// the spinning _start is func 1.
	spin := wasmModule(secTypes, section(2, 1, 3, 'e', 'n', 'v', 4, 't', 'i', 'c', 'k', 0, 0), secFuncs, secMemory,
		section(7, 2, 6, '_', 's', 't', 'a', 'r', 't', 0, 1, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0), secSpin)
	m, err := e.Compile(ctx, spin, CompileOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := func(limit time.Duration) (time.Duration, error) {
		rctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		start := time.Now()
		err := e.Run(rctx, m, RunConfig{Stdout: io.Discard, Stderr: io.Discard, Walltime: func() (int64, int32) { return 0, 0 },
			Nanotime: func() int64 { return 1 }, Nanosleep: func(int64) {}, Rand: bytes.NewReader(nil)})
		return time.Since(start), err
	}
	d, err := run(300 * time.Millisecond)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 0xefffffff || d < 250*time.Millisecond || d > 2*time.Second {
		t.Fatalf("the spinning run ended with %v after %v; want exit code 0xefffffff (deadline) after about 300ms", err, d)
	}

	// A garbage collection, which stops every goroutine, does not wait
	// for a spinning guest to end: the checks leave native code for Go.
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = run(time.Second) // spins while the collection runs; its end was checked above
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	runtime.GC()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a collection during a spinning guest took %v", d)
	}
	<-done
}

// TestInterruptGlobalsUnreachable: a module whose code names a global
// past its own (which the appended flag would become) is refused before
// the checks are added: it could otherwise clear the flag, or hold the
// countdown away from its preemption point.
func TestInterruptGlobalsUnreachable(t *testing.T) {
	// _start: loop (i32.const 0, global.set 0, br 0) in a module without globals.
	body := section(10, 1, 11, 0, 0x03, 0x40, 0x41, 0, 0x24, 0, 0x0c, 0, 0x0b, 0x0b)
	_, err := addInterruptChecks(wasmModule(secTypes, secFuncs, secMemory, secExports, body), nil)
	if err == nil || !strings.Contains(err.Error(), "global index 0, but the module has 0 globals") {
		t.Fatalf("a module setting a global it does not have: %v; want it refused", err)
	}
}

// TestModuleCodeOnePass: the module Compile hands wazero, assembled once
// from the prepared sections with the data split off and the checks
// written in, is byte for byte the module of the steps taken one by one
// (assemble the prepared sections, split the data off, add the checks).
func TestModuleCodeOnePass(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.Build(t, "./testdata/workflows/bench"))
	if err != nil {
		t.Fatal(err)
	}
	e := &wazeroEngine{checks: true}
	sections, shape := e.prepareReactor(wasm)
	if !shape.reactor {
		t.Fatal("the bench module is not a reactor")
	}
	stripped, image, ok := splitData(assemble(wasm, sections, -1, nil))
	if !ok {
		t.Fatal("splitData refused a Go module")
	}
	want, err := addInterruptChecks(stripped, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, img, unchecked, err := e.moduleCode(wasm, sections, CompileOptions{})
	if err != nil || unchecked != nil {
		t.Fatal(err, unchecked)
	}
	if img == nil {
		t.Skip("no copy-on-write images here: the data segments stay in the module")
	}
	defer img.close()
	if !bytes.Equal(got, want) {
		t.Fatalf("one pass: %d bytes; step by step: %d bytes, not the same", len(got), len(want))
	}
	if !bytes.Equal(img.data[:len(image)], image) {
		t.Fatal("the image differs from the split data")
	}
}
