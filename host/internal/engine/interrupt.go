package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/skeinrun/skein/host/internal/wasmlimits"
)

// Interrupts on wazero. wazero's own way to stop a guest whose context
// ended (RuntimeConfig.WithCloseOnContextDone) leaves the guest's native
// code for Go at every loop header, to check the instance and to let the
// Go runtime preempt the goroutine (native code cannot be preempted, and
// a garbage collection waits for every goroutine). A Go guest enters a
// loop in nearly every function (its goroutine switches are built from
// them), and those exits made guest code about 1.85 times slower.
//
// Instead the engine adds two mutable i32 globals to the module, a flag
// exported as interruptExport and a countdown, and at the start of every
// loop body the instructions
//
//	global.get $countdown
//	i32.eqz
//	if
//	  i32.const checkEvery
//	  global.set $countdown
//	  i32.const 0
//	  memory.grow       ;; leaves for Go (a preemption point), grows nothing
//	  drop
//	  global.get $flag
//	  if
//	    unreachable
//	  end
//	else
//	  global.get $countdown
//	  i32.const 1
//	  i32.sub
//	  global.set $countdown
//	end
//
// which stay in native code but every checkEvery-th time. Run sets the
// flag when the call's context ends, and an instance that traps with it
// set ends as wazero's own interrupt would (interruptedError). The rest
// of the module is unchanged: the globals and the export are appended,
// so no index moves. DWARF sections, whose code offsets would be stale,
// are dropped. A module without a linear memory is refused: memory.grow
// needs one, and a skein module has one anyway (abi/README.md).

// interruptExport names the interrupt flag's export.
const interruptExport = "skein.interrupt"

// errNoMemory refuses a module without a linear memory, which cannot
// have the checks.
var errNoMemory = errors.New("it has no linear memory; a skein module defines one (abi/README.md)")

// checkEvery is how many loop entries pass between two checks of the
// flag: a spinning Go guest takes a fraction of a millisecond for them.
const checkEvery = 1 << 16

// newGlobal is a mutable i32 global starting at 0, and newCountdown one
// starting at checkEvery (global section entries).
var (
	newGlobal    = []byte{0x7f, 0x01, 0x41, 0x00, 0x0b}
	newCountdown = append(append([]byte{0x7f, 0x01, 0x41}, sleb(checkEvery)...), 0x0b)
)

func sleb(v int64) []byte { return appendSLEB128(nil, v) }

// checkCode is the code of a check (see above) with the flag at global
// flag and the countdown at flag+1.
func checkCode(flag uint32) []byte {
	g := func(op byte, i uint32) []byte { return binary.AppendUvarint([]byte{op}, uint64(i)) }
	var c []byte
	c = append(c, g(0x23, flag+1)...)
	c = append(c, 0x45, 0x04, 0x40, 0x41)
	c = append(c, sleb(checkEvery)...)
	c = append(c, g(0x24, flag+1)...)
	c = append(c, 0x41, 0x00, 0x40, 0x00, 0x1a)
	c = append(c, g(0x23, flag)...)
	c = append(c, 0x04, 0x40, 0x00, 0x0b, 0x05)
	c = append(c, g(0x23, flag+1)...)
	c = append(c, 0x41, 0x01, 0x6b)
	c = append(c, g(0x24, flag+1)...)
	return append(c, 0x0b)
}

// addInterruptChecks returns wasm with the interrupt flag and its checks.
// shape, if not nil, is the measured shape of a module with the same code
// section (its Loops are used; else wasm is measured).
func addInterruptChecks(wasm []byte, shape *wasmlimits.Shape) ([]byte, error) {
	sections, err := sectionsOf(wasm)
	if err != nil {
		return nil, err
	}
	return interruptChecked(wasm, sections, shape)
}

// interruptChecked is addInterruptChecks of a module split into sections
// (wasm holds its header): it assembles the module once, with the checks
// written straight into it, and with no custom section but "name" (the
// checks make DWARF's code offsets stale; wazero reads no other).
func interruptChecked(wasm []byte, sections []wasmSection, shape *wasmlimits.Shape) ([]byte, error) {
	if shape == nil || shape.CodeBytes != codeBytes(sections) {
		s, err := wasmlimits.Measure(assemble(wasm, sections, -1, nil))
		if err != nil {
			return nil, err
		}
		shape = &s
	}
	loops := shape.Loops
	flag, memory, err := nextGlobal(sections)
	if err != nil {
		return nil, err
	}
	if !memory {
		return nil, errNoMemory
	}
	check := checkCode(flag)
	size := 8 + len(loops)*(len(check)+1) + 128 // a body with checks may need a longer size too
	for _, s := range sections {
		size += 1 + binary.MaxVarintLen32 + len(s.content)
	}
	out := append(make([]byte, 0, size), wasm[:8]...)
	added := map[byte]bool{}
	for _, s := range sections {
		c := s.content
		switch {
		case s.id == 0 && customName(c) != "name":
			continue
		case s.id == 6:
			c, added[6] = appendVec(appendVec(c, newGlobal), newCountdown), true
		case s.id == 7:
			c, added[7] = appendVec(c, flagExport(flag)), true
		}
		out = addMissing(out, s.id, added, flag)
		if s.id == 10 {
			if out, err = appendCheckedCode(out, c, loops, check); err != nil {
				return nil, err
			}
			continue
		}
		out = appendSection(out, s.id, c)
	}
	return addMissing(out, 255, added, flag), nil
}

// addMissing appends the global and export sections, if the module has
// none, where they belong: before the first section that follows them
// (next is the id of the section about to be written; 255 at the end).
func addMissing(out []byte, next byte, added map[byte]bool, flag uint32) []byte {
	if next == 0 {
		return out
	}
	if !added[6] && next > 6 {
		out, added[6] = appendSection(out, 6, appendVec(appendVec([]byte{0}, newGlobal), newCountdown)), true
	}
	if !added[7] && next > 7 {
		out, added[7] = appendSection(out, 7, appendVec([]byte{0}, flagExport(flag))), true
	}
	return out
}

// flagExport is the export entry of the interrupt flag, global flag.
func flagExport(flag uint32) []byte { return globalExport(nil, interruptExport, flag) }

// globalExport appends the export entry of global g as name.
func globalExport(b []byte, name string, g uint32) []byte {
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, 3) // global
	return binary.AppendUvarint(b, uint64(g))
}

// nextGlobal returns the index the next defined global gets (the
// imported globals plus those the global section defines), and whether
// the module has a memory.
func nextGlobal(sections []wasmSection) (next uint32, memory bool, err error) {
	n := 0
	for _, s := range sections {
		switch s.id {
		case 2:
			k, imported, err := importCounts(s.content)
			if err != nil {
				return 0, false, err
			}
			n, memory = n+k, memory || imported
		case 5:
			k, w := uvarint(s.content)
			memory = memory || (w > 0 && k > 0)
		case 6:
			k, w := uvarint(s.content)
			if w <= 0 {
				return 0, false, errors.New("bad global section")
			}
			n += int(k)
		}
	}
	return uint32(n), memory, nil
}

// appendVec returns the content of a vector section with entry added.
func appendVec(content, entry []byte) []byte {
	n, k := uvarint(content)
	c := binary.AppendUvarint(nil, n+1)
	c = append(c, content[k:]...)
	return append(c, entry...)
}

// appendCheckedCode appends the code section whose content is content,
// with check inserted at each offset of loops (in content, ascending). It
// walks the function bodies twice: once for the section's size, once to
// write it, so the section goes straight into out.
func appendCheckedCode(out, content []byte, loops []int, check []byte) ([]byte, error) {
	size := 0
	if err := walkBodies(content, loops, len(check), func(_, _ int, bodySize uint64, _ []int) {
		size += uvarintLen(bodySize) + int(bodySize)
	}); err != nil {
		return nil, err
	}
	n, _ := uvarint(content)
	out = append(out, 10)
	out = binary.AppendUvarint(out, uint64(uvarintLen(n)+size))
	out = binary.AppendUvarint(out, n)
	err := walkBodies(content, loops, len(check), func(start, end int, bodySize uint64, at []int) {
		out = binary.AppendUvarint(out, bodySize)
		from := start
		for _, l := range at {
			out = append(append(out, content[from:l]...), check...)
			from = l
		}
		out = append(out, content[from:end]...)
	})
	return out, err
}

// walkBodies calls body for each function body of the code section
// content with its span in content, its size once a check of checkLen
// bytes is inserted at each of its loops, and its loops.
func walkBodies(content []byte, loops []int, checkLen int, body func(start, end int, size uint64, at []int)) error {
	n, k := uvarint(content)
	if k <= 0 {
		return errors.New("bad code section")
	}
	pos, next := k, 0
	for range n {
		size, w := uvarint(content[pos:])
		if w <= 0 || uint64(len(content)-pos-w) < size {
			return fmt.Errorf("bad function body at byte %d of the code section", pos)
		}
		start, end := pos+w, pos+w+int(size)
		first := next
		for next < len(loops) && loops[next] < end {
			if loops[next] < start {
				return fmt.Errorf("a loop at byte %d of the code section, outside a function body", loops[next])
			}
			next++
		}
		body(start, end, size+uint64((next-first)*checkLen), loops[first:next])
		pos = end
	}
	if next != len(loops) {
		return fmt.Errorf("%d loops outside the function bodies", len(loops)-next)
	}
	return nil
}

// uvarintLen is the length of v's LEB128 encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// codeBytes is the size of the code section's content (0 without one).
func codeBytes(sections []wasmSection) int {
	for _, s := range sections {
		if s.id == 10 {
			return len(s.content)
		}
	}
	return 0
}

// appendSection appends a section.
func appendSection(out []byte, id byte, content []byte) []byte {
	out = append(out, id)
	out = binary.AppendUvarint(out, uint64(len(content)))
	return append(out, content...)
}

// instantiate instantiates cm and calls the start functions named by
// start in turn, as wazero's InstantiateModule with those start functions
// does, with the calls interruptible (call).
func (e *wazeroEngine) instantiate(ctx context.Context, cm wazero.CompiledModule, cfg wazero.ModuleConfig, start ...string) (api.Module, error) {
	if !e.checks {
		return e.rt.InstantiateModule(ctx, cm, cfg.WithStartFunctions(start...))
	}
	mod, err := e.rt.InstantiateModule(ctx, cm, cfg.WithStartFunctions())
	if err != nil {
		return mod, err
	}
	for _, name := range start {
		fn := mod.ExportedFunction(name)
		if fn == nil {
			continue
		}
		if err := e.call(ctx, mod, fn); err != nil {
			mod.Close(context.WithoutCancel(ctx))
			var se *sys.ExitError
			if errors.As(err, &se) {
				if se.ExitCode() == 0 {
					return nil, nil
				}
				return nil, err
			}
			return nil, fmt.Errorf("module[%s] function[%s] failed: %w", mod.Name(), name, err)
		}
	}
	return mod, nil
}

// call calls fn of mod, setting mod's interrupt flag if ctx ends during
// the call; a call that ends with the flag set fails with
// interruptedError, whatever the guest was doing.
func (e *wazeroEngine) call(ctx context.Context, mod api.Module, fn api.Function) error {
	if !e.checks || ctx.Done() == nil {
		_, err := fn.Call(ctx)
		return err
	}
	flag, ok := mod.ExportedGlobal(interruptExport).(api.MutableGlobal)
	if !ok {
		return fmt.Errorf("engine: the module has no %s global", interruptExport)
	}
	set := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		flag.Set(1)
		close(set)
	})
	_, err := fn.Call(ctx)
	if !stop() {
		<-set
		if err != nil {
			return interruptedError(ctx, err)
		}
	}
	return err
}

// interruptedError is the error of a call that ctx interrupted (err is
// what the guest ended with): a *sys.ExitError with the exit code wazero
// gives a module it closed when its context ended, unless the guest
// ended for a reason of its own first (a host function's stop, an exit).
func interruptedError(ctx context.Context, err error) error {
	var se *sys.ExitError
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return sys.NewExitError(sys.ExitCodeDeadlineExceeded)
	}
	return sys.NewExitError(sys.ExitCodeContextCanceled)
}
