package engine

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestMemoryReset: a memory mapped from an image gets the image's
// contents back after the guest wrote to it, both by copying the image
// over the written pages (which leaves the pages only read mapped) and
// by mapping the image again.
func TestMemoryReset(t *testing.T) {
	const pages = 16
	ps := int(osPageSize)
	data := make([]byte, pages*ps)
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	img, err := newMemImage(data)
	if err != nil {
		t.Fatal(err)
	}
	defer img.close()
	for _, copyBack := range []bool{true, false} {
		m, ok := imageMemory(img, uint64(len(data)), 64*uint64(len(data)), true).(*reservedMemory)
		if !ok {
			t.Fatal("no reserved memory")
		}
		buf := m.Reallocate(uint64(len(data)))
		_ = buf[3*ps] // read page 3
		buf[1*ps] ^= 0xff
		buf[5*ps+7] ^= 0xff
		buf[15*ps+ps-1] ^= 0xff
		var read bool
		if copyBack {
			m.ents, read = img.restoreWritten(m.buf, m.ents)
			if !read {
				t.Skip("/proc/self/pagemap cannot be read here")
			}
			if private(t, buf, 3) || !private(t, buf, 1) {
				t.Error("page 3 (read) should still map the image, page 1 (written) be a private copy")
			}
		} else if err := img.mapInto(m.buf[:cap(m.buf)]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data) {
			t.Errorf("copyBack=%v: the memory differs from the image after the reset", copyBack)
		}
		m.Free()
	}
}

// private reports whether page i of buf is present and a private copy.
func private(t *testing.T, buf []byte, i int) bool {
	ps := int(osPageSize)
	ent := make([]byte, 8)
	addr := uintptr(unsafe.Pointer(&buf[i*ps])) / uintptr(ps)
	if _, err := pagemap().ReadAt(ent, int64(addr)*8); err != nil {
		t.Fatal(err)
	}
	e := binary.LittleEndian.Uint64(ent)
	return e&(1<<63) != 0 && e&(1<<61) == 0
}
