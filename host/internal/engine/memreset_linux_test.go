package engine

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestMemoryReset: a memory mapped from an image gets the image's
// contents back after the guest wrote to it, by copying the image over
// the written pages (found with PAGEMAP_SCAN, or by reading the page
// map's entries on kernels without it), which leaves the pages only
// read mapped, and by mapping the image again.
func TestMemoryReset(t *testing.T) {
	const pages = 16
	ps := int(osPageSize)
	data := make([]byte, pages*ps-100) // a tail past the image, in its last page
	for i := range data {
		data[i] = byte(rand.IntN(256))
	}
	img, err := newMemImage(data)
	if err != nil {
		t.Fatal(err)
	}
	defer img.close()
	want := append(data, make([]byte, 100)...)
	for _, mode := range []string{"scan", "entries", "map"} {
		m, ok := imageMemory(img, uint64(len(want)), 64*uint64(len(want)), true).(*reservedMemory)
		if !ok {
			t.Fatal("no reserved memory")
		}
		buf := m.Reallocate(uint64(len(want)))
		_ = buf[3*ps] // read page 3
		buf[1*ps] ^= 0xff
		buf[5*ps+7] ^= 0xff
		buf[6*ps+7] ^= 0xff     // pages 5 and 6: one range
		buf[15*ps+ps-1] ^= 0xff // in the tail
		switch mode {
		case "scan", "entries":
			noPagemapScan.Store(mode == "entries")
			read := img.restoreWritten(m.buf, &m.scratch)
			if !read {
				t.Skip("/proc/self/pagemap cannot be read here")
			}
			if mode == "scan" && noPagemapScan.Load() {
				t.Log("this kernel has no PAGEMAP_SCAN: the entries were read")
			}
			noPagemapScan.Store(false)
			if private(t, buf, 3) || !private(t, buf, 1) || !private(t, buf, 6) {
				t.Errorf("%s: page 3 (read) should still map the image, pages 1 and 6 (written) be private copies", mode)
			}
		case "map":
			if err := img.mapInto(m.buf[:cap(m.buf)]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(buf, want) {
			t.Errorf("%s: the memory differs from the image after the reset", mode)
		}
		m.Free()
	}
}

// BenchmarkMemoryReset resets an 8 MB memory of which the guest wrote
// 40 pages, with PAGEMAP_SCAN and with the page map's entries.
func BenchmarkMemoryReset(b *testing.B) {
	ps := int(osPageSize)
	data := make([]byte, 8<<20)
	for i := 0; i < len(data); i += 64 {
		data[i] = 1
	}
	img, err := newMemImage(data)
	if err != nil {
		b.Fatal(err)
	}
	defer img.close()
	for _, mode := range []string{"scan", "entries"} {
		b.Run(mode, func(b *testing.B) {
			m, ok := imageMemory(img, uint64(len(data)), 2*uint64(len(data)), true).(*reservedMemory)
			if !ok {
				b.Fatal("no reserved memory")
			}
			defer m.Free()
			buf := m.Reallocate(uint64(len(data)))
			noPagemapScan.Store(mode == "entries")
			defer noPagemapScan.Store(false)
			for b.Loop() {
				for p := 0; p < 40; p++ {
					buf[(p*97%2048)*ps] = 2
				}
				if !img.restoreWritten(m.buf, &m.scratch) {
					b.Skip("/proc/self/pagemap cannot be read here")
				}
			}
		})
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

// TestSnapshotImage: the image of a memory mapped from a base image and
// then read and written (within the base and past it, with data and with
// zeros) is byte for byte the memory, built from the base's file and the
// written pages only.
func TestSnapshotImage(t *testing.T) {
	ps := int(osPageSize)
	data := make([]byte, 16*ps)
	for i := range data {
		data[i] = byte(rand.IntN(255) + 1)
	}
	base, err := newMemImage(data)
	if err != nil {
		t.Fatal(err)
	}
	defer base.close()
	lm := imageMemory(base, uint64(len(data)), uint64(64*ps), true)
	if !mapped(lm) {
		t.Skip("no mapped memory here")
	}
	defer lm.Free()
	buf := lm.Reallocate(uint64(32 * ps)) // 16 pages of base, 16 past it
	_ = buf[2*ps]                         // read within the base
	_ = buf[20*ps]                        // read past it
	buf[3*ps+5] = 0                       // a write within the base
	clear(buf[4*ps : 5*ps])               // a page of the base made zeros
	buf[17*ps+9] = 7                      // a write past the base
	buf[18*ps] = 0                        // zeros written past the base
	img := snapshotImage(base, buf)
	if img == nil {
		t.Skip("the kernel cannot scan the page map or copy files")
	}
	defer img.close()
	if !bytes.Equal(img.data, buf) {
		for p := 0; p < len(buf); p += ps {
			if !bytes.Equal(img.data[p:p+ps], buf[p:p+ps]) {
				t.Errorf("page %d differs", p/ps)
			}
		}
	}
}
