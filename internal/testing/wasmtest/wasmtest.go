// Package wasmtest holds hand-assembled wasm modules for tests of bad
// input.
package wasmtest

// TrapModule is a hand-assembled skein module of 148 bytes: it imports
// three skein host functions with their ABI v1 signatures, says hello
// with ABI version v, announces workflow "w", reads its invocation and
// then executes unreachable.
func TrapModule(v byte) []byte {
	sec := func(id byte, body ...byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	imp := func(name string, typ byte) []byte {
		b := append(str("skein"), str(name)...)
		return append(b, 0x00, typ)
	}
	var m []byte
	m = append(m, 0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00)
	m = append(m, sec(1, 4,
		0x60, 1, 0x7f, 1, 0x7f, // 0: (i32) -> i32
		0x60, 2, 0x7f, 0x7f, 0, // 1: (i32, i32) -> ()
		0x60, 2, 0x7f, 0x7f, 1, 0x7f, // 2: (i32, i32) -> i32
		0x60, 0, 0, // 3: () -> ()
	)...)
	imports := []byte{3}
	imports = append(imports, imp("hello", 0)...)
	imports = append(imports, imp("workflows", 1)...)
	imports = append(imports, imp("invocation", 2)...)
	m = append(m, sec(2, imports...)...)
	m = append(m, sec(3, 1, 3)...)    // one function of type 3
	m = append(m, sec(5, 1, 0, 1)...) // one memory, 1 page
	exports := []byte{2}
	exports = append(exports, str("_start")...)
	exports = append(exports, 0x00, 3)
	exports = append(exports, str("memory")...)
	exports = append(exports, 0x02, 0)
	m = append(m, sec(7, exports...)...)
	body := []byte{0x00, // no locals
		0x41, v, 0x10, 0, 0x1a, // hello(v); drop
		0x41, 0, 0x41, 1, 0x10, 1, // workflows(0, 1)
		0x41, 0, 0x41, 0, 0x10, 2, 0x1a, // invocation(0, 0); drop
		0x00, 0x0b} // unreachable; end
	m = append(m, sec(10, append([]byte{1, byte(len(body))}, body...)...)...)
	m = append(m, sec(11, 1, 0, 0x41, 0, 0x0b, 1, 'w')...) // "w" at offset 0
	return m
}
