// Package wasmlimits measures the structure of a WebAssembly binary (how
// deep one function nests blocks, how many functions, locals, types,
// globals, table elements and segments it declares, how large each
// function body is) without compiling it, and checks it against limits.
//
// The host runs it on every module before wazero sees the module: a
// module small enough to upload can still make a compiler work for
// hours (compile time is quadratic in block nesting) or make it
// allocate gigabytes (a function declaring four billion locals), and
// both are rejected here in time linear in the module's size, with no
// allocation that depends on a declared count. It decodes every
// section and every instruction with its immediates; what it does not
// know (an opcode of a proposal skein does not enable) is a FormatError.
package wasmlimits

import (
	"errors"
	"fmt"
)

// Limits bounds a module's structure. A zero or negative field is not
// checked.
type Limits struct {
	Nesting         int // blocks, loops and ifs open at once in one function
	ControlOps      int // block, loop, if, else, br, br_if and br_table instructions in one function
	Functions       int // functions, imported and defined
	FunctionBytes   int // bytes of one function body (its locals and code)
	Locals          int // locals one function declares (its parameters not counted)
	Types           int // function types
	TypeValues      int // parameters plus results of one function type
	Imports         int // imports of any kind
	Exports         int // exports of any kind
	Globals         int // globals, imported and defined
	TableElements   int // size a table can reach (see Shape.TableElements); elements of all element segments together
	DataSegments    int // data segments
	ElementSegments int // element segments
	MemoryPages     int // initial size of the memory, in 64 KiB pages
}

// Shape is what Measure found. For the maxima over functions (or types)
// the ...At field is the index of the first function (or type) that
// reaches it; function indexes count imported functions first, as the
// binary format does.
type Shape struct {
	Nesting, NestingAt             int
	ControlOps, ControlOpsAt       int
	FunctionBytes, FunctionBytesAt int
	Locals, LocalsAt               int
	TypeValues, TypeValuesAt       int
	Functions, Types               int
	Imports, Exports, Globals      int
	// TableElements is the largest size a table can reach: its declared
	// maximum (4294967295 when it declares none) if the module has a
	// table.grow instruction, else its initial size.
	TableElements   int64
	Elements        int64 // elements of all element segments
	DataSegments    int
	ElementSegments int
	MemoryPages     int64 // initial pages of the memory (0 without one)
	CodeBytes       int   // size of the code section
	// Loops are where the body of each loop instruction starts (just
	// after its block type), in order, as byte offsets in the code
	// section's content: the same in every module with that content,
	// whatever its other sections (the engine adds its interrupt checks
	// there).
	Loops []int
	// StateWrites reports code that changes an instance's state outside
	// its linear memory and globals: a table.set, table.grow, table.fill,
	// table.copy, table.init, elem.drop or data.drop instruction.
	StateWrites bool
}

// FormatError reports a module that is not a well-formed WebAssembly
// binary of the features skein enables, where Measure read it.
type FormatError struct {
	Where string // "the code section, function 12", "the module header"
	Err   error
}

func (e *FormatError) Error() string { return fmt.Sprintf("malformed %s: %v", e.Where, e.Err) }

func (e *FormatError) Unwrap() error { return e.Err }

// ExceededError reports a module over one of the Limits.
type ExceededError struct {
	Limit string // the Limits field, e.g. "Nesting"
	What  string // what went over, e.g. "function 12 nests blocks 5000 deep"
	Max   int64  // the limit's value
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("%s (limit %s = %d)", e.What, e.Limit, e.Max)
}

// Check measures wasm and checks it against l: a *FormatError, an
// *ExceededError or nil.
func Check(wasm []byte, l Limits) (Shape, error) {
	s, err := Measure(wasm)
	if err != nil {
		return s, err
	}
	return s, l.Check(s)
}

// Check compares a measured shape with the limits and returns the first
// limit exceeded as an *ExceededError.
func (l Limits) Check(s Shape) error {
	checks := []struct {
		limit string
		max   int
		got   int64
		what  string
	}{
		{"Nesting", l.Nesting, int64(s.Nesting), fmt.Sprintf("function %d nests blocks %d deep", s.NestingAt, s.Nesting)},
		{"ControlOps", l.ControlOps, int64(s.ControlOps), fmt.Sprintf("function %d has %d control instructions", s.ControlOpsAt, s.ControlOps)},
		{"FunctionBytes", l.FunctionBytes, int64(s.FunctionBytes), fmt.Sprintf("function %d is %d bytes", s.FunctionBytesAt, s.FunctionBytes)},
		{"Functions", l.Functions, int64(s.Functions), fmt.Sprintf("the module has %d functions", s.Functions)},
		{"Locals", l.Locals, int64(s.Locals), fmt.Sprintf("function %d declares %d locals", s.LocalsAt, s.Locals)},
		{"Types", l.Types, int64(s.Types), fmt.Sprintf("the module declares %d function types", s.Types)},
		{"TypeValues", l.TypeValues, int64(s.TypeValues), fmt.Sprintf("function type %d has %d parameters and results", s.TypeValuesAt, s.TypeValues)},
		{"Imports", l.Imports, int64(s.Imports), fmt.Sprintf("the module has %d imports", s.Imports)},
		{"Exports", l.Exports, int64(s.Exports), fmt.Sprintf("the module has %d exports", s.Exports)},
		{"Globals", l.Globals, int64(s.Globals), fmt.Sprintf("the module has %d globals", s.Globals)},
		{"TableElements", l.TableElements, s.TableElements, fmt.Sprintf("a table of the module can reach %d elements", s.TableElements)},
		{"TableElements", l.TableElements, s.Elements, fmt.Sprintf("the element segments hold %d elements", s.Elements)},
		{"DataSegments", l.DataSegments, int64(s.DataSegments), fmt.Sprintf("the module has %d data segments", s.DataSegments)},
		{"ElementSegments", l.ElementSegments, int64(s.ElementSegments), fmt.Sprintf("the module has %d element segments", s.ElementSegments)},
		{"MemoryPages", l.MemoryPages, s.MemoryPages, fmt.Sprintf("the module's memory starts at %d pages", s.MemoryPages)},
	}
	for _, c := range checks {
		if c.max > 0 && c.got > int64(c.max) {
			return &ExceededError{Limit: c.limit, What: c.what, Max: int64(c.max)}
		}
	}
	return nil
}

// Section ids of the binary format.
const (
	secCustom = iota
	secType
	secImport
	secFunction
	secTable
	secMemory
	secGlobal
	secExport
	secStart
	secElement
	secCode
	secData
	secDataCount
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count"}

// Measure decodes wasm far enough to fill a Shape.
func Measure(wasm []byte) (Shape, error) {
	var m measurer
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return m.s, &FormatError{Where: "module header", Err: errors.New(`no "\0asm" magic number`)}
	}
	if string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return m.s, &FormatError{Where: "module header", Err: fmt.Errorf("binary format version %v, want 1", wasm[4:8])}
	}
	r := &reader{b: wasm, pos: 8}
	last := 0
	for !r.done() {
		id := r.byte()
		size := r.u32()
		start := r.pos
		content := r.bytes(uint64(size))
		if r.err != nil {
			return m.s, &FormatError{Where: "section list", Err: r.err}
		}
		if id > secDataCount {
			return m.s, &FormatError{Where: "section list", Err: fmt.Errorf("unknown section id %d at byte %d", id, start-2)}
		}
		if id != secCustom {
			// The data count section (12) comes between element and code.
			if order := sectionOrder(id); order <= last {
				return m.s, &FormatError{Where: sectionNames[id] + " section", Err: errors.New("out of order or repeated")}
			} else {
				last = order
			}
		}
		sr := &reader{b: content, off: start}
		m.section(id, sr)
		if sr.err == nil && !sr.done() && id != secCustom {
			sr.fail("%d bytes left over at the end of the section", len(sr.b)-sr.pos)
		}
		if sr.err != nil {
			where := sectionNames[id] + " section"
			if w := m.where(); w != "" {
				where += ", " + w
			}
			return m.s, &FormatError{Where: where, Err: sr.err}
		}
	}
	if m.s.Functions-m.imported != m.bodies {
		return m.s, &FormatError{Where: "code section", Err: fmt.Errorf("%d function bodies for %d declared functions", m.bodies, m.s.Functions-m.imported)}
	}
	m.finishTables()
	return m.s, nil
}

func sectionOrder(id byte) int {
	switch {
	case id == secDataCount:
		return secElement*2 + 1
	case id > secElement:
		return int(id)*2 + 2
	}
	return int(id) * 2
}
