package wasmlimits

// code reads the code section: for each function body its size, its
// locals and the nesting of its instructions.
func (m *measurer) code(r *reader) {
	n := r.count(2)
	m.bodies = int(n)
	for i := 0; i < int(n) && r.err == nil; i++ {
		fn := m.imported + i
		m.at("function", fn)
		size := r.u32()
		start := r.pos
		body := r.bytes(uint64(size))
		if r.err != nil {
			return
		}
		if int(size) > m.s.FunctionBytes {
			m.s.FunctionBytes, m.s.FunctionBytesAt = int(size), fn
		}
		br := &reader{b: body, off: r.off + start}
		var locals uint64
		groups := br.count(2)
		for j := uint32(0); j < groups && br.err == nil; j++ {
			locals += uint64(br.u32())
			valType(br)
		}
		if locals > uint64(m.s.Locals) {
			m.s.Locals, m.s.LocalsAt = int(min(locals, 1<<40)), fn
		}
		m.control = 0
		depth := m.expr(br)
		if br.err == nil && !br.done() {
			br.fail("%d bytes after the end of the function", len(br.b)-br.pos)
		}
		if br.err != nil {
			r.err = br.err
			return
		}
		if depth > m.s.Nesting {
			m.s.Nesting, m.s.NestingAt = depth, fn
		}
		if m.control > m.s.ControlOps {
			m.s.ControlOps, m.s.ControlOpsAt = m.control, fn
		}
	}
}

// expr reads instructions up to the end that closes the expression and
// returns the deepest nesting of blocks, loops and ifs inside it.
func (m *measurer) expr(r *reader) int {
	depth, deepest := 0, 0
	for r.err == nil {
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			blockType(r)
			if op == 0x03 {
				m.s.Loops = append(m.s.Loops, r.off+r.pos-m.codeAt)
			}
			m.control++
			depth++
			deepest = max(deepest, depth)
		case op == 0x0b: // end
			if depth == 0 {
				return deepest
			}
			depth--
		case op == 0x05 || op == 0x0c || op == 0x0d: // else, br, br_if
			m.control++
			if op != 0x05 {
				r.u32()
			}
		case op == 0x0e: // br_table
			m.control++
			k := r.count(1)
			for j := uint32(0); j <= k && r.err == nil; j++ {
				r.u32()
			}
		case op == 0x1c: // select with types
			k := r.count(1)
			for j := uint32(0); j < k && r.err == nil; j++ {
				valType(r)
			}
		case op == 0x23 || op == 0x24: // global.get, global.set
			if g := r.u32(); r.err == nil && int64(g) >= int64(m.s.Globals) {
				r.fail("global index %d, but the module has %d globals", g, m.s.Globals)
			}
		case op == 0x26: // table.set
			m.s.StateWrites = true
			plainOp(r, op)
		case op == 0xfc:
			m.miscOp(r)
		case op == 0xfd:
			vectorOp(r)
		default:
			plainOp(r, op)
		}
	}
	return deepest
}

// plainOp reads the immediates of a one-byte opcode other than the
// structured and prefixed ones.
func plainOp(r *reader, op byte) {
	switch {
	case op <= 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
		// unreachable, nop, else, return, drop, select, ref.is_null
	case op == 0x0c || op == 0x0d || op == 0x10: // br, br_if, call
		r.u32()
	case op == 0x11: // call_indirect
		r.u32()
		r.u32()
	case op >= 0x20 && op <= 0x26: // locals, globals, table.get/set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		r.u32()
		r.u32()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41:
		r.sleb(32)
	case op == 0x42:
		r.sleb(64)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric and sign-extension instructions
	case op == 0xd0: // ref.null
		refType(r)
	case op == 0xd2: // ref.func
		r.u32()
	default:
		if r.err == nil {
			r.pos--
			r.fail("unknown or unsupported opcode 0x%02x%s", op, unsupported(op))
		}
	}
}

// unsupported names the proposal an opcode skein does not enable belongs to.
func unsupported(op byte) string {
	switch op {
	case 0x06, 0x07, 0x08, 0x09, 0x0a, 0x18, 0x19, 0x1f:
		return " (exception handling, which skein does not enable)"
	case 0x12, 0x13:
		return " (tail calls, which skein does not enable)"
	case 0x14, 0x15, 0xd3, 0xd4, 0xd5, 0xd6:
		return " (typed function references, which skein does not enable)"
	case 0xfb:
		return " (garbage collection, which skein does not enable)"
	case 0xfe:
		return " (threads, which skein does not enable)"
	}
	return ""
}

// blockType reads the type of a block, loop or if: empty (0x40), a value
// type, or a type index (a signed 33-bit number).
func blockType(r *reader) {
	if r.pos < len(r.b) {
		switch r.b[r.pos] {
		case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69:
			r.pos++
			return
		case 0x63, 0x64:
			r.pos++
			r.sleb(33)
			return
		}
	}
	r.sleb(33)
}

// miscOp reads an instruction of the 0xfc prefix: saturating
// conversions, bulk memory and table instructions.
func (m *measurer) miscOp(r *reader) {
	switch sub := r.u32(); sub {
	case 0, 1, 2, 3, 4, 5, 6, 7: // trunc_sat
	case 9, 11, 13, 16, 17: // data.drop, memory.fill, elem.drop, table.size, table.fill
		r.u32()
		if sub == 9 || sub == 13 || sub == 17 { // data.drop, elem.drop, table.fill
			m.s.StateWrites = true
		}
	case 8, 10, 12, 14: // memory.init, memory.copy, table.init, table.copy
		r.u32()
		r.u32()
		if sub == 12 || sub == 14 { // table.init, table.copy
			m.s.StateWrites = true
		}
	case 15: // table.grow
		r.u32()
		m.grows = true
		m.s.StateWrites = true
	default:
		if r.err == nil {
			r.fail("unknown opcode 0xfc %d", sub)
		}
	}
}

// vectorOp reads a SIMD instruction (the 0xfd prefix).
func vectorOp(r *reader) {
	sub := r.u32()
	switch {
	case r.err != nil:
	case sub <= 0x0b || sub == 0x5c || sub == 0x5d: // loads and stores: a memarg
		r.u32()
		r.u32()
	case sub == 0x0c || sub == 0x0d: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 0x15 && sub <= 0x22: // extract_lane, replace_lane
		r.byte()
	case sub >= 0x54 && sub <= 0x5b: // load_lane, store_lane: a memarg and a lane
		r.u32()
		r.u32()
		r.byte()
	case sub > 0xff || vectorGaps[sub]:
		r.fail("unknown opcode 0xfd %d", sub)
	}
}

// vectorGaps are the numbers below 0x100 that no SIMD instruction has.
var vectorGaps = func() (g [256]bool) {
	for _, op := range []int{0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee} {
		g[op] = true
	}
	return g
}()
