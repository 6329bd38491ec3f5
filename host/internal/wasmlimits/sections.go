package wasmlimits

import "fmt"

// measurer fills a Shape section by section.
type measurer struct {
	s        Shape
	item     string // the kind of item being read, for a FormatError
	index    int    // and its index
	imported int    // imported functions
	bodies   int    // function bodies read
	tables   []table
	grows    bool   // the code has a table.grow instruction
	dataEnd  uint64 // end of the furthest active data segment at a constant offset
	dataAt   int    // index of that segment
	control  int    // control instructions of the function being read
	codeAt   int    // where the code section's content starts in the module
}

// at records the item being read.
func (m *measurer) at(item string, index int) { m.item, m.index = item, index }

// where names the item being read.
func (m *measurer) where() string {
	if m.item == "" {
		return ""
	}
	return fmt.Sprintf("%s %d", m.item, m.index)
}

// table is a table's declared limits.
type table struct {
	min, max uint64
	hasMax   bool
}

func (m *measurer) section(id byte, r *reader) {
	m.item = ""
	switch id {
	case secType:
		m.types(r)
	case secImport:
		m.imports(r)
	case secFunction:
		n := r.count(1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.at("function", m.s.Functions+int(i))
			m.typeIndex(r)
		}
		m.s.Functions += int(n)
	case secTable:
		n := r.count(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.tableType(r)
		}
	case secMemory:
		n := r.count(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			min, _, _ := limits(r, true)
			m.s.MemoryPages = max(m.s.MemoryPages, int64(min))
		}
	case secGlobal:
		m.globals(r)
	case secExport:
		m.exports(r)
	case secStart:
		r.u32()
	case secElement:
		m.elements(r)
	case secDataCount:
		r.u32()
	case secCode:
		m.s.CodeBytes, m.codeAt = len(r.b), r.off
		m.code(r)
	case secData:
		m.data(r)
	}
}

func (m *measurer) types(r *reader) {
	n := r.count(3)
	m.s.Types = int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		m.at("type", i)
		if form := r.byte(); r.err == nil && form != 0x60 {
			r.fail("type form 0x%02x; skein enables only function types (0x60)", form)
			return
		}
		values := 0
		for range 2 { // parameters, then results
			k := r.count(1)
			for j := uint32(0); j < k && r.err == nil; j++ {
				valType(r)
			}
			values += int(k)
		}
		if values > m.s.TypeValues {
			m.s.TypeValues, m.s.TypeValuesAt = values, i
		}
	}
}

func (m *measurer) imports(r *reader) {
	n := r.count(4)
	m.s.Imports = int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		m.at("import", i)
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0x00:
			m.typeIndex(r)
			m.s.Functions++
			m.imported++
		case 0x01:
			m.tableType(r)
		case 0x02:
			min, _, _ := limits(r, true)
			m.s.MemoryPages = max(m.s.MemoryPages, int64(min))
		case 0x03:
			valType(r)
			mutability(r)
			m.s.Globals++
		default:
			r.fail("import kind 0x%02x", kind)
		}
	}
}

// typeIndex reads a function's type index, which must name a declared
// type (wazero's validation indexes its types by it unchecked).
func (m *measurer) typeIndex(r *reader) {
	if t := r.u32(); r.err == nil && int(t) >= m.s.Types {
		r.fail("type index %d, but the module declares %d types", t, m.s.Types)
	}
}

func (m *measurer) tableType(r *reader) {
	refType(r)
	min, mx, has := limits(r, false)
	m.tables = append(m.tables, table{min: min, max: mx, hasMax: has})
}

// finishTables computes Shape.TableElements once the code is known.
func (m *measurer) finishTables() {
	for _, t := range m.tables {
		size := t.min
		if m.grows {
			size = 1<<32 - 1
			if t.hasMax {
				size = t.max
			}
		}
		m.s.TableElements = max(m.s.TableElements, int64(size))
	}
}

func (m *measurer) globals(r *reader) {
	n := r.count(3)
	m.s.Globals += int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		m.at("global", i)
		valType(r)
		mutability(r)
		m.expr(r)
	}
}

func (m *measurer) exports(r *reader) {
	n := r.count(3)
	m.s.Exports = int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		m.at("export", i)
		r.name()
		if kind := r.byte(); kind > 0x03 {
			r.fail("export kind 0x%02x", kind)
		}
		r.u32()
	}
}

func (m *measurer) elements(r *reader) {
	n := r.count(2)
	m.s.ElementSegments = int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		m.at("element segment", i)
		flags := r.u32()
		if flags > 7 {
			r.fail("element segment flags %d", flags)
			return
		}
		if flags&2 != 0 && flags&1 == 0 { // an explicit table index
			r.u32()
		}
		if flags&1 == 0 { // active: an offset
			m.expr(r)
		}
		if flags&3 != 0 { // an element kind or a reference type
			if flags&4 == 0 {
				if k := r.byte(); r.err == nil && k != 0x00 {
					r.fail("element kind 0x%02x", k)
				}
			} else {
				refType(r)
			}
		}
		if flags&4 == 0 { // function indexes
			k := r.count(1)
			for j := uint32(0); j < k && r.err == nil; j++ {
				r.u32()
			}
			m.s.Elements += int64(k)
		} else { // expressions
			k := r.count(2)
			for j := uint32(0); j < k && r.err == nil; j++ {
				m.expr(r)
			}
			m.s.Elements += int64(k)
		}
	}
}

func (m *measurer) data(r *reader) {
	n := r.count(2)
	m.s.DataSegments = int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		m.at("data segment", i)
		flags := r.u32()
		if flags > 2 {
			r.fail("data segment flags %d", flags)
			return
		}
		if flags == 2 {
			r.u32() // memory index
		}
		offset, constant := int64(0), false
		if flags != 1 {
			offset, constant = m.offset(r)
		}
		size := r.u32()
		r.bytes(uint64(size))
		if end := uint64(offset) + uint64(size); constant && end > m.dataEnd {
			m.dataEnd, m.dataAt = end, i
		}
	}
	if r.err == nil && m.dataEnd > uint64(m.s.MemoryPages)*65536 {
		m.at("data segment", m.dataAt)
		r.fail("it ends at byte %d, beyond the initial memory of %d pages (instantiation would fail)", m.dataEnd, m.s.MemoryPages)
	}
}

// offset reads an offset expression; constant is true for "i32.const N".
func (m *measurer) offset(r *reader) (v int64, constant bool) {
	if r.pos+1 < len(r.b) && r.b[r.pos] == 0x41 {
		save := r.pos
		r.pos++
		v = r.s32()
		if r.err == nil && r.pos < len(r.b) && r.b[r.pos] == 0x0b {
			r.pos++
			return int64(uint32(v)), true
		}
		r.pos = save
	}
	m.expr(r)
	return 0, false
}

// limits reads a table's or memory's limits.
func limits(r *reader, memory bool) (min, max uint64, hasMax bool) {
	flags := r.byte()
	switch {
	case flags == 0x00:
		return uint64(r.u32()), 0, false
	case flags == 0x01:
		min, max = uint64(r.u32()), uint64(r.u32())
		return min, max, true
	case memory && flags == 0x03:
		r.fail("shared memory (threads), which skein does not enable")
	default:
		r.fail("limits flags 0x%02x", flags)
	}
	return 0, 0, false
}

// valType reads a value type, as wazero's decoder accepts them (whether
// the feature a type belongs to is enabled is wazero's to check).
func valType(r *reader) {
	switch t := r.byte(); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69: // i32 i64 f32 f64 v128 funcref externref exnref
	case 0x63, 0x64: // (ref null ht), (ref ht)
		r.sleb(33)
	default:
		if r.err == nil {
			r.fail("value type 0x%02x", t)
		}
	}
}

func refType(r *reader) {
	if t := r.byte(); r.err == nil && t != 0x70 && t != 0x6f {
		r.fail("reference type 0x%02x", t)
	}
}

func mutability(r *reader) {
	if b := r.byte(); r.err == nil && b > 1 {
		r.fail("global mutability 0x%02x", b)
	}
}
