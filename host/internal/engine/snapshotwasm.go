package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// A snapshot as a module (Wizer's approach). An engine that cannot give
// an instance a memory image of its own (wasmtime) takes a reactor's
// snapshot by rewriting the module: its globals start at the values
// _initialize left, its memory at the size _initialize left it, and its
// data segments hold that memory. Instances of the rewritten module
// start where _initialize ended and call skein_main directly; the engine
// initialises their memory from the data segments as from any module's
// (wasmtime maps them copy-on-write). The rewritten module is only
// compiled: the module is still stored, hashed and identified by its
// original bytes.

// snapshotWasm returns wasm rewritten to start in the state of its
// snapshot: globals holds the value (its bits, as uint64) of every
// mutable global the module defines, by global index; mem is the linear
// memory. It refuses (an error) a module of a form it does not handle:
// no memory of its own or more than one, a data count section, a global
// whose type is not a number.
func snapshotWasm(wasm []byte, globals map[uint32]uint64, mem []byte) ([]byte, error) {
	if len(mem)%65536 != 0 {
		return nil, fmt.Errorf("snapshot: memory of %d bytes is not whole pages", len(mem))
	}
	sections, err := sectionsOf(wasm)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	shape, err := shapeOf(sections)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	data := dataContent(memorySegments(mem))
	out := make([]wasmSection, 0, len(sections)+1)
	hasMemory, hasData := false, slices.ContainsFunc(sections, func(s wasmSection) bool { return s.id == 11 })
	for _, s := range sections {
		switch s.id {
		case 5:
			c, err := snapshotMemory(s.content, uint32(len(mem)/65536))
			if err != nil {
				return nil, err
			}
			s.content, hasMemory = c, true
		case 6:
			c, err := snapshotGlobals(s.content, uint32(shape.first), globals)
			if err != nil {
				return nil, err
			}
			s.content = c
		case 8:
			continue // the start function ran before _initialize: its effects are in the snapshot
		case 11:
			s.content = data
		case 12:
			return nil, errors.New("snapshot: a data count section (bulk-memory code may name the segments)")
		}
		out = append(out, s)
		if s.id == 10 && !hasData { // the data section follows the code section
			out = append(out, wasmSection{id: 11, content: data})
			hasData = true
		}
	}
	if !hasMemory {
		return nil, errors.New("snapshot: the module defines no memory")
	}
	if !hasData {
		return nil, errors.New("snapshot: the module has no code section")
	}
	return assemble(wasm, out, -1, nil), nil
}

// snapshotMemory is a memory section whose one memory's minimum is pages.
func snapshotMemory(b []byte, pages uint32) ([]byte, error) {
	r := &wasmReader{b: b}
	if n := r.u32(); n != 1 || r.err != nil {
		return nil, fmt.Errorf("snapshot: %d memories, want one", n)
	}
	flags := r.byte()
	min := r.u32()
	max, hasMax := uint32(0), flags == 1
	if hasMax {
		max = r.u32()
	}
	switch {
	case r.err != nil || len(r.b) != 0:
		return nil, errors.New("snapshot: bad memory section")
	case flags > 1:
		return nil, fmt.Errorf("snapshot: memory flags %#x (shared or 64-bit memory)", flags)
	case pages < min || hasMax && pages > max:
		return nil, fmt.Errorf("snapshot: memory of %d pages outside the module's limits", pages)
	}
	out := []byte{1, flags}
	out = binary.AppendUvarint(out, uint64(pages))
	if hasMax {
		out = binary.AppendUvarint(out, uint64(max))
	}
	return out, nil
}

// snapshotGlobals is a global section whose mutable globals are
// initialised to their values in globals (first is the index of the
// section's first global); immutable globals keep their initialisers.
func snapshotGlobals(b []byte, first uint32, globals map[uint32]uint64) ([]byte, error) {
	r := &wasmReader{b: b}
	n := r.u32()
	out := binary.AppendUvarint(nil, uint64(n))
	for i := range n {
		start := r.b
		typ, mut := r.byte(), r.byte()
		if err := skipConstExpr(r); err != nil {
			return nil, fmt.Errorf("snapshot: global %d: %w", first+i, err)
		}
		if mut == 0 {
			out = append(out, start[:len(start)-len(r.b)]...)
			continue
		}
		v, ok := globals[first+i]
		if !ok {
			return nil, fmt.Errorf("snapshot: no value for mutable global %d", first+i)
		}
		out = append(out, typ, mut)
		switch ValueType(typ) {
		case I32:
			out = appendSLEB128(append(out, 0x41), int64(int32(uint32(v))))
		case I64:
			out = appendSLEB128(append(out, 0x42), int64(v))
		case 0x7d: // f32
			out = binary.LittleEndian.AppendUint32(append(out, 0x43), uint32(v))
		case 0x7c: // f64
			out = binary.LittleEndian.AppendUint64(append(out, 0x44), v)
		default:
			return nil, fmt.Errorf("snapshot: mutable global %d of type %#x", first+i, typ)
		}
		out = append(out, 0x0b)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errors.New("snapshot: bad global section")
	}
	return out, nil
}

// skipConstExpr reads a constant expression up to its end.
func skipConstExpr(r *wasmReader) error {
	for r.err == nil {
		switch op := r.byte(); op {
		case 0x0b: // end
			return nil
		case 0x41, 0x42, 0xd0: // i32.const, i64.const, ref.null (s33 heap type)
			if _, n := sleb128(r.b); n <= 0 {
				r.fail("bad immediate")
			} else {
				r.b = r.b[n:]
			}
		case 0x43, 0x44: // f32.const, f64.const
			k := map[byte]int{0x43: 4, 0x44: 8}[op]
			if len(r.b) < k {
				r.fail("short immediate")
			} else {
				r.b = r.b[k:]
			}
		case 0x23, 0xd2: // global.get, ref.func
			r.u32()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constants: add, sub, mul
		default:
			return fmt.Errorf("constant expression with opcode %#x", op)
		}
	}
	return r.err
}

// memorySegments returns the non-zero runs of mem as data segments,
// merging runs separated by up to maxDataGap zeros (as mergeData does):
// the segments alias mem.
func memorySegments(mem []byte) []dataSegment {
	var segs []dataSegment
	for i := nextNonZero(mem, 0); i < len(mem); {
		j := i + 1
		for j < len(mem) && mem[j] != 0 {
			j++
		}
		if n := len(segs); n > 0 && i-(int(segs[n-1].offset)+len(segs[n-1].data)) <= maxDataGap {
			segs[n-1].data = mem[segs[n-1].offset:j]
		} else {
			segs = append(segs, dataSegment{offset: uint32(i), data: mem[i:j]})
		}
		i = nextNonZero(mem, j)
	}
	return segs
}

// nextNonZero is the index of the first byte of b from i on that is not
// zero, or len(b).
func nextNonZero(b []byte, i int) int {
	for ; i < len(b) && i%8 != 0; i++ {
		if b[i] != 0 {
			return i
		}
	}
	for i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == 0 {
		i += 8
	}
	for ; i < len(b) && b[i] == 0; i++ {
	}
	return i
}

// dataContent is a data section holding segs as active segments of
// memory 0.
func dataContent(segs []dataSegment) []byte {
	out := binary.AppendUvarint(nil, uint64(len(segs)))
	for _, s := range segs {
		// active, memory 0, offset (i32.const: from 2 GiB on, negative), end
		out = append(out, 0x00, 0x41)
		out = appendSLEB128(out, int64(int32(s.offset)))
		out = append(out, 0x0b)
		out = binary.AppendUvarint(out, uint64(len(s.data)))
		out = append(out, s.data...)
	}
	return out
}
