package wasmlimits

import (
	"errors"
	"fmt"
)

// errTruncated reports input that ended inside an item.
var errTruncated = errors.New("unexpected end")

// reader reads the binary format's primitives from a byte slice. The
// first error sticks: later reads return zero values, and the caller
// checks err once per item.
type reader struct {
	b   []byte
	off int // offset of b[0] in the module, for messages
	pos int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.off+r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *reader) done() bool { return r.err != nil || r.pos >= len(r.b) }

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("%v", errTruncated)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.pos) {
		r.fail("%v: %d bytes announced, %d left", errTruncated, n, len(r.b)-r.pos)
		return nil
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s
}

// uleb reads an unsigned LEB128 number of at most bits bits.
func (r *reader) uleb(bits uint) uint64 {
	var v uint64
	var shift uint
	for i := 0; ; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i == int((bits+6)/7) {
			r.fail("integer longer than %d bits", bits)
			return 0
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if bits < 64 && v>>bits != 0 {
				r.fail("integer longer than %d bits", bits)
				return 0
			}
			return v
		}
	}
}

// u32 reads an unsigned 32-bit LEB128 number.
func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// sleb skips a signed LEB128 number of at most bits bits (immediates whose
// value does not matter here).
func (r *reader) sleb(bits uint) {
	for i := 0; ; i++ {
		c := r.byte()
		if r.err != nil {
			return
		}
		if i == int((bits+6)/7) {
			r.fail("integer longer than %d bits", bits)
			return
		}
		if c < 0x80 {
			return
		}
	}
}

// count reads a vector's length and checks that at least min bytes per
// element are left, so that a forged length cannot make a caller
// allocate or loop far beyond the input.
func (r *reader) count(min int) uint32 {
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(min) > uint64(len(r.b)-r.pos) {
		r.fail("a vector of %d items does not fit in the %d bytes left", n, len(r.b)-r.pos)
		return 0
	}
	return n
}

// name skips a UTF-8 name.
func (r *reader) name() { r.bytes(uint64(r.u32())) }

// s32 reads a signed 32-bit LEB128 number.
func (r *reader) s32() int64 {
	var v int64
	var shift uint
	for i := 0; ; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i == 5 {
			r.fail("integer longer than 32 bits")
			return 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c < 0x80 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				r.fail("integer longer than 32 bits")
				return 0
			}
			return v
		}
	}
}
