package wasmtest

import "encoding/binary"

// Shape describes a generated skein module (see Shaped). Zero fields add
// nothing.
type Shape struct {
	Workflow        string // the workflow it announces; default "w"
	Nesting         int    // blocks nested in one extra function
	Functions       int    // extra functions, each with BodyOps and Locals
	BodyOps         int    // groups "local.get; i32.const 1; i32.add; local.set" in each extra function
	Branches        int    // groups "block; local.get 0; br_if 0; end" in each extra function
	Locals          int    // i32 locals each extra function declares (at least 1)
	Types           int    // extra function types, each with TypeValues i32 parameters
	TypeValues      int    // parameters of each extra type
	Globals         int    // mutable i32 globals
	TableMin        uint32 // initial size of a funcref table (none when 0)
	DataSegments    int    // extra one-byte data segments
	ElementSegments int    // element segments, each holding the function _start
	Pad             int    // bytes of a custom section "pad"
	// Raw, if set, is the code of one more function of type () -> ()
	// without locals, ending with its own end (0x0b).
	Raw []byte
}

// Shaped returns a valid skein module shaped by s: it imports hello,
// workflows and invocation from skein with their ABI v1 signatures, says
// hello with ABI version 1, announces s.Workflow, reads its invocation
// and executes unreachable, so it deploys and every run of it fails.
// The extra functions, types, globals and segments are never used.
func Shaped(s Shape) []byte {
	if s.Workflow == "" {
		s.Workflow = "w"
	}
	m := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	// Types: 0 (i32)->i32, 1 (i32,i32)->(), 2 (i32,i32)->i32, 3 ()->(), then the extra ones.
	types := []byte{0x60, 1, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 0, 0x60, 2, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0}
	for range s.Types {
		types = append(types, 0x60)
		types = uleb(types, s.TypeValues)
		for range s.TypeValues {
			types = append(types, 0x7f)
		}
		types = append(types, 0)
	}
	m = section(m, 1, vec(4+s.Types, types))
	var imports []byte
	for i, name := range []string{"hello", "workflows", "invocation"} {
		imports = append(imports, str("skein")...)
		imports = append(imports, str(name)...)
		imports = append(imports, 0x00, byte(i))
	}
	m = section(m, 2, vec(3, imports))
	extra := s.Functions
	if s.Nesting > 0 {
		extra++
	}
	if s.Raw != nil {
		extra++
	}
	funcs := []byte{3}
	for range extra {
		funcs = append(funcs, 3)
	}
	m = section(m, 3, vec(1+extra, funcs))
	if s.TableMin > 0 {
		m = section(m, 4, vec(1, uleb([]byte{0x70, 0x00}, int(s.TableMin))))
	}
	m = section(m, 5, vec(1, []byte{0, 1})) // one memory of 1 page
	if s.Globals > 0 {
		var g []byte
		for range s.Globals {
			g = append(g, 0x7f, 1, 0x41, 0, 0x0b)
		}
		m = section(m, 6, vec(s.Globals, g))
	}
	exports := append(str("_start"), 0x00, 3)
	exports = append(append(exports, str("memory")...), 0x02, 0)
	m = section(m, 7, vec(2, exports))
	if s.ElementSegments > 0 {
		var e []byte
		for range s.ElementSegments {
			e = append(e, 0x01, 0x00, 1, 3) // passive, funcref, [function 3]
		}
		m = section(m, 9, vec(s.ElementSegments, e))
	}
	m = section(m, 10, vec(1+extra, s.code()))
	data := append([]byte{0, 0x41, 0, 0x0b}, str(s.Workflow)...) // the name at offset 0
	for range s.DataSegments {
		data = append(data, 0, 0x41, 0xe0, 0, 0x0b, 1, 0) // at offset 96 (i32.const, signed LEB128), past the name
	}
	m = section(m, 11, vec(1+s.DataSegments, data))
	if s.Pad > 0 {
		m = section(m, 0, append(str("pad"), make([]byte, s.Pad)...))
	}
	return m
}

// code returns the bodies of _start and of the extra functions.
func (s Shape) code() []byte {
	start := []byte{0x00, // no locals
		0x41, 1, 0x10, 0, 0x1a, // hello(1); drop
		0x41, 0, 0x41, byte(len(s.Workflow)), 0x10, 1, // workflows(0, len)
		0x41, 0, 0x41, 0, 0x10, 2, 0x1a, // invocation(0, 0); drop
		0x00, 0x0b} // unreachable; end
	code := body(nil, start)
	locals := max(s.Locals, 1)
	for range s.Functions {
		b := uleb([]byte{1}, locals)
		b = append(b, 0x7f)
		for i := range s.BodyOps {
			l := i % locals
			b = uleb(append(b, 0x20), l)
			b = append(b, 0x41, 1, 0x6a, 0x21)
			b = uleb(b, l)
		}
		for range s.Branches {
			b = append(b, 0x02, 0x40, 0x20, 0, 0x0d, 0, 0x0b)
		}
		code = body(code, append(b, 0x0b))
	}
	if s.Nesting > 0 {
		b := make([]byte, 0, 1+3*s.Nesting+1)
		b = append(b, 0x00)
		for range s.Nesting {
			b = append(b, 0x02, 0x40)
		}
		for range s.Nesting {
			b = append(b, 0x0b)
		}
		code = body(code, append(b, 0x0b))
	}
	if s.Raw != nil {
		code = body(code, append([]byte{0x00}, s.Raw...))
	}
	return code
}

// WithCustomSection returns wasm with a custom section named name holding
// n zero bytes appended: a module that behaves as wasm does but has
// another hash (and size).
func WithCustomSection(wasm []byte, name string, n int) []byte {
	content := append(str(name), make([]byte, n)...)
	out := make([]byte, 0, len(wasm)+len(content)+6)
	return section(append(out, wasm...), 0, content)
}

func uleb(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }

func str(s string) []byte { return append(uleb(nil, len(s)), s...) }

func vec(n int, items []byte) []byte { return append(uleb(nil, n), items...) }

func body(code, b []byte) []byte { return append(uleb(code, len(b)), b...) }

func section(m []byte, id byte, content []byte) []byte {
	return append(uleb(append(m, id), len(content)), content...)
}

// Variant returns wasm with one more immutable i32 global (of value i)
// at the end of its global section, which must exist (Go modules have
// one), and with a custom section "variant" of pad zero bytes: a module
// that runs as wasm does but whose code, as wazero sees it, differs, so
// that it is compiled on its own. It panics on a module without a
// global section.
func Variant(wasm []byte, i, pad int) []byte {
	out := append(make([]byte, 0, len(wasm)+pad+32), wasm[:8]...)
	found := false
	for p := 8; p < len(wasm); {
		id := wasm[p]
		size, n := binary.Uvarint(wasm[p+1:])
		content := wasm[p+1+n : p+1+n+int(size)]
		p += 1 + n + int(size)
		if id == 6 {
			count, k := binary.Uvarint(content)
			g := uleb(nil, int(count)+1)
			g = append(g, content[k:]...)
			g = append(g, 0x7f, 0x00, 0x41)
			g = appendSLEB(g, int64(i))
			content = append(g, 0x0b)
			found = true
		}
		out = section(out, id, content)
	}
	if !found {
		panic("wasmtest.Variant: the module has no global section")
	}
	return WithCustomSection(out, "variant", pad)
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
