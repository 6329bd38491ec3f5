package engine

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
)

// Go's linker writes a module's initial data as thousands of small data
// segments (38,019 for a 3.4 MB workflow module) separated by short runs
// of zeros. wazero evaluates every segment's offset expression and copies
// it at every instantiation, which costs about 2.5 ms per instance: most
// of a run's activation. mergeDataSegments rewrites the data section into
// a few large segments, filling the gaps with the zeros the memory holds
// anyway, so instantiation copies the same bytes to the same places with
// a few calls. The rewritten module is only compiled: a module is still
// stored, hashed and identified by its original bytes.

// maxDataGap is the longest run of zeros merged into a segment.
const maxDataGap = 4096

// mergeDataSegments returns wasm with its active data segments merged, or
// wasm itself when the module has a form it does not handle (passive or
// multi-memory segments, non-constant offsets, overlapping segments, a
// data count section) or nothing to merge.
func mergeDataSegments(wasm []byte) []byte {
	out, err := mergeData(wasm)
	if err != nil || out == nil {
		return wasm
	}
	return out
}

type dataSegment struct {
	offset uint32
	data   []byte
}

// wasmSection is one section of a module.
type wasmSection struct {
	id      byte
	content []byte
}

// activeData parses a module's sections and its data segments, sorted by
// offset. ok is false when the module has a form the rewrites do not
// handle: passive or multi-memory segments, non-constant offsets,
// overlapping segments, a data count section.
func activeData(wasm []byte) (sections []wasmSection, dataIndex int, segs []dataSegment, ok bool, err error) {
	if len(wasm) < 8 {
		return nil, 0, nil, false, errors.New("short module")
	}
	if sections, err = sectionsOf(wasm); err != nil {
		return nil, 0, nil, false, err
	}
	return activeDataOf(sections)
}

// activeDataOf is activeData of a module already split into sections.
func activeDataOf(sections []wasmSection) (_ []wasmSection, dataIndex int, segs []dataSegment, ok bool, err error) {
	dataIndex = -1
	for i, s := range sections {
		switch s.id {
		case 11:
			dataIndex = i
		case 12:
			return nil, 0, nil, false, nil // a data count section: bulk-memory code may name segments by index
		}
	}
	if dataIndex < 0 {
		return nil, 0, nil, false, nil
	}
	segs, err = parseData(sections[dataIndex].content)
	if err != nil || segs == nil {
		return nil, 0, nil, false, err
	}
	// The order of copies matters only where segments overlap, which is
	// refused; sorted by offset, neighbours can be merged.
	slices.SortStableFunc(segs, func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) })
	for i := 1; i < len(segs); i++ {
		if uint64(segs[i].offset) < uint64(segs[i-1].offset)+uint64(len(segs[i-1].data)) {
			return nil, 0, nil, false, nil
		}
	}
	return sections, dataIndex, segs, true, nil
}

// sectionsOf splits a module into its sections.
func sectionsOf(wasm []byte) ([]wasmSection, error) {
	if len(wasm) < 8 {
		return nil, errors.New("short module")
	}
	var sections []wasmSection
	for i := 8; i < len(wasm); {
		id := wasm[i]
		size, n := uvarint(wasm[i+1:])
		if n <= 0 || uint64(len(wasm)-i-1-n) < size {
			return nil, errors.New("bad section")
		}
		i += 1 + n
		sections = append(sections, wasmSection{id: id, content: wasm[i : i+int(size)]})
		i += int(size)
	}
	return sections, nil
}

// assemble writes a module from its sections, with the data section's
// content replaced. It leaves out the custom sections wazero has no use
// for (all but "name" and DWARF's ".debug_*"): a module padded with a
// large custom section costs no copy of it.
func assemble(header []byte, sections []wasmSection, dataIndex int, data []byte) []byte {
	content := func(i int) []byte {
		if i == dataIndex {
			return data
		}
		return sections[i].content
	}
	kept := func(s wasmSection) bool { return s.id != 0 || keptCustom(s.content) }
	size := 8
	for i, s := range sections {
		if kept(s) {
			size += 1 + binary.MaxVarintLen32 + len(content(i))
		}
	}
	// Sized once: a module is megabytes, and growing it by appends would
	// copy it several times into fresh memory.
	out := append(make([]byte, 0, size), header[:8]...)
	for i, s := range sections {
		if kept(s) {
			out = appendSection(out, s.id, content(i))
		}
	}
	return out
}

// keptCustom reports whether a custom section (its content) is one
// wazero reads: the name section or DWARF debug information.
func keptCustom(content []byte) bool {
	name := customName(content)
	return name == "name" || strings.HasPrefix(name, ".debug_")
}

// customName is the name of a custom section (its content); "" if it
// has none.
func customName(content []byte) string {
	n, k := uvarint(content)
	if k <= 0 || uint64(len(content)-k) < n {
		return ""
	}
	return string(content[k : k+int(n)])
}

func mergeData(wasm []byte) ([]byte, error) {
	sections, dataIndex, segs, ok, err := activeData(wasm)
	if err != nil || !ok || len(segs) < 2 {
		return nil, err
	}
	var merged []dataSegment
	for _, s := range segs {
		if len(merged) > 0 {
			last := &merged[len(merged)-1]
			end := uint64(last.offset) + uint64(len(last.data))
			if gap := uint64(s.offset) - end; gap <= maxDataGap {
				last.data = append(last.data, make([]byte, gap)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, dataSegment{offset: s.offset, data: append([]byte(nil), s.data...)})
	}
	if len(merged) == len(segs) {
		return nil, nil
	}
	return assemble(wasm, sections, dataIndex, dataContent(merged)), nil
}

// splitData returns the module without data segments and the initial
// memory they describe (up to the end of the last segment), so that the
// host can give every instance that memory without copying it (see
// memImage). ok is false when the module has a form activeData refuses.
func splitData(wasm []byte) (stripped, image []byte, ok bool) {
	sections, err := sectionsOf(wasm)
	if err != nil {
		return nil, nil, false
	}
	if sections, image, ok = stripData(sections); !ok {
		return nil, nil, false
	}
	return assemble(wasm, sections, -1, nil), image, true
}

// stripData returns sections with an empty data section, and the initial
// memory their data segments describe (see splitData). It leaves
// sections as they are.
func stripData(sections []wasmSection) (stripped []wasmSection, image []byte, ok bool) {
	sections, dataIndex, segs, ok, err := activeDataOf(sections)
	if err != nil || !ok || len(segs) == 0 {
		return nil, nil, false
	}
	last := segs[len(segs)-1]
	size, data := uint64(last.offset)+uint64(len(last.data)), uint64(0)
	for _, s := range segs {
		data += uint64(len(s.data))
	}
	if size > 2*data+1<<20 { // sparse: an image would cost more than the segments
		return nil, nil, false
	}
	image = make([]byte, size)
	for _, s := range segs {
		copy(image[s.offset:], s.data)
	}
	stripped = slices.Clone(sections)
	stripped[dataIndex].content = []byte{0}
	return stripped, image, true
}

// parseData parses a data section whose segments are all active, in
// memory 0, at an i32.const offset.
func parseData(b []byte) ([]dataSegment, error) {
	count, n := uvarint(b)
	if n <= 0 {
		return nil, errors.New("bad data count")
	}
	b = b[n:]
	segs := make([]dataSegment, 0, count)
	for k := uint64(0); k < count; k++ {
		if len(b) < 2 || b[0] != 0x00 || b[1] != 0x41 {
			return nil, nil // passive, explicit memory, or another offset expression
		}
		off, n := sleb128(b[2:])
		if n <= 0 || len(b) < 2+n+1 || b[2+n] != 0x0b || off < 0 || off > 1<<31-1 {
			return nil, nil
		}
		b = b[2+n+1:]
		size, m := uvarint(b)
		if m <= 0 || uint64(len(b)-m) < size {
			return nil, errors.New("bad data segment")
		}
		segs = append(segs, dataSegment{offset: uint32(off), data: b[m : m+int(size)]})
		b = b[m+int(size):]
	}
	if len(b) != 0 {
		return nil, errors.New("trailing bytes in the data section")
	}
	return segs, nil
}

// uvarint decodes an unsigned LEB128 number; n <= 0 on error.
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// sleb128 decodes a signed LEB128 number (wasm's i32.const immediate);
// n <= 0 on error.
func sleb128(b []byte) (v int64, n int) {
	var shift uint
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1
		}
	}
	return 0, 0
}

// appendSLEB128 appends v as a signed LEB128 number.
func appendSLEB128(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
