package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
)

// Reactor modules (abi/README.md, "Start-up and snapshots"). A module
// that exports the functions _initialize and skein_main is a reactor: its
// start-up (for a Go guest, the runtime and package initialisation) runs
// in _initialize, then skein_prepare if the module exports it (for a Go
// guest, main up to skein.Main), and skein_main runs the invocation. The
// engine runs the start-up once per compiled module, captures the
// instance's state (linear memory and mutable globals), and starts every
// instance from that snapshot: it maps the memory copy-on-write, sets the
// globals and calls skein_main, without running the start-up again.

// Export names of a reactor module.
const (
	ReactorInit    = "_initialize"
	ReactorPrepare = "skein_prepare" // optional: runs after ReactorInit, before the snapshot
	ReactorEntry   = "skein_main"
)

// reactorStartUp is a reactor's start-up, in order; a function the module
// does not export is skipped (only skein_prepare may be missing).
var reactorStartUp = []string{ReactorInit, ReactorPrepare}

// globalExportPrefix names the exports the engine adds to a reactor
// module for its globals, so that it can read and set them.
const globalExportPrefix = "skein:global:"

// reactorShape is what the engine needs to know of a module to snapshot
// it: whether it is a reactor and which globals it defines.
type reactorShape struct {
	reactor bool
	first   int // index of the first global the module defines (after imported ones)
	globals int // globals the module defines
}

// shapeOf reads a module's imports, globals and exports.
func shapeOf(sections []wasmSection) (reactorShape, error) {
	var s reactorShape
	var exports map[string]byte
	for _, sec := range sections {
		var err error
		switch sec.id {
		case 2:
			s.first, err = importedGlobals(sec.content)
		case 6:
			n, k := uvarint(sec.content)
			if k <= 0 {
				err = errors.New("bad global section")
			}
			s.globals = int(n)
		case 7:
			exports, err = exportKinds(sec.content)
		}
		if err != nil {
			return reactorShape{}, err
		}
	}
	s.reactor = exports[ReactorInit] == 0 && exports[ReactorEntry] == 0 &&
		hasKey(exports, ReactorInit) && hasKey(exports, ReactorEntry)
	return s, nil
}

func hasKey(m map[string]byte, k string) bool { _, ok := m[k]; return ok }

// exportKinds parses an export section into name -> kind.
func exportKinds(b []byte) (map[string]byte, error) {
	r := &wasmReader{b: b}
	n := r.u32()
	out := make(map[string]byte, n)
	for range n {
		name := r.name()
		kind := r.byte()
		r.u32()
		if r.err != nil {
			return nil, fmt.Errorf("bad export section: %w", r.err)
		}
		out[name] = kind
	}
	return out, r.err
}

// importedGlobals counts the globals an import section imports.
func importedGlobals(b []byte) (int, error) {
	globals, _, err := importCounts(b)
	return globals, err
}

// importCounts reads an import section (its content): the globals it
// imports, and whether it imports a memory.
func importCounts(b []byte) (globals int, memory bool, err error) {
	r := &wasmReader{b: b}
	for range r.u32() {
		r.name()
		r.name()
		switch r.byte() {
		case 0: // function: type index
			r.u32()
		case 1: // table: reference type, limits
			r.byte()
			r.limits()
		case 2: // memory: limits
			r.limits()
			memory = true
		case 3: // global: value type, mutability
			r.byte()
			r.byte()
			globals++
		default:
			r.fail("unknown import kind")
		}
		if r.err != nil {
			return 0, false, fmt.Errorf("bad import section: %w", r.err)
		}
	}
	return globals, memory, r.err
}

// exportGlobals returns the sections with an export added for every
// global the module defines, named globalExportPrefix + index.
func exportGlobals(sections []wasmSection, s reactorShape) []wasmSection {
	out := append([]wasmSection(nil), sections...)
	for i, sec := range out {
		if sec.id != 7 {
			continue
		}
		n, k := uvarint(sec.content)
		c := binary.AppendUvarint(nil, n+uint64(s.globals))
		c = append(c, sec.content[k:]...)
		for g := s.first; g < s.first+s.globals; g++ {
			c = globalExport(c, fmt.Sprintf("%s%d", globalExportPrefix, g), uint32(g))
		}
		out[i].content = c
	}
	return out
}

// snapshot is a reactor module's state after _initialize.
type snapshot struct {
	globals map[string]uint64 // mutable globals by export name
	pages   uint32            // size of the linear memory, in 64 KiB pages
	img     *memImage         // the linear memory
}

// initWorld is what a reactor's _initialize sees of the world: the same
// for every module and every run, so that what the start-up reads (the
// Go runtime reads 32 random bytes and the monotonic clock) is part of
// the module, not of a run. The monotonic clock reads 1 s, where every
// run's clock starts; the wall clock reads the Unix epoch.
func initWorld(stderr io.Writer) RunConfig {
	var seed [32]byte
	copy(seed[:], "skein-module-initialisation")
	return RunConfig{
		Args:      []string{"workflow"},
		Stdout:    io.Discard,
		Stderr:    stderr,
		Walltime:  func() (int64, int32) { return 0, 0 },
		Nanotime:  func() int64 { return 1e9 },
		Nanosleep: func(int64) {},
		Rand:      rand.NewChaCha8(seed),
	}
}

// wasmReader reads the LEB128 numbers and names of a section; the first
// error sticks.
type wasmReader struct {
	b   []byte
	err error
}

func (r *wasmReader) fail(msg string) {
	if r.err == nil {
		r.err = errors.New(msg)
	}
	r.b = nil
}

func (r *wasmReader) u32() uint32 {
	v, n := uvarint(r.b)
	if n <= 0 || v > 1<<32-1 {
		r.fail("bad number")
		return 0
	}
	r.b = r.b[n:]
	return uint32(v)
}

func (r *wasmReader) byte() byte {
	if len(r.b) == 0 {
		r.fail("short section")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *wasmReader) name() string {
	n := r.u32()
	if uint64(len(r.b)) < uint64(n) {
		r.fail("short name")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *wasmReader) limits() {
	if flags := r.byte(); flags&1 != 0 {
		r.u32()
	}
	r.u32()
}
