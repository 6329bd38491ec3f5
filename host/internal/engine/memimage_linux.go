//go:build linux

package engine

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// memImage is a module's initial linear memory (what its data segments
// write), held in an in-memory file. Every instance maps it privately
// (copy-on-write) at the start of its memory instead of copying it: pages
// the guest only reads stay shared between instances and cost no copy,
// pages it writes are copied on the first write, pages it never touches
// cost nothing.
type memImage struct {
	fd   int
	size uint64 // page-rounded
	// data is the file mapped shared and read-only, for restoreWritten and
	// for instances that cannot map the file: no copy of the image on the
	// Go heap, and a page of it costs memory only once read. It is
	// unmapped when the image becomes unreachable, not at close, since
	// an instance's reset may still read it then.
	data []byte
}

// newMemImage writes data into a new image. data is not kept: it may be
// a view of an instance's memory (a snapshot).
func newMemImage(data []byte) (*memImage, error) {
	fd, err := unix.MemfdCreate("skein-memory-image", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	size := roundUp(uint64(len(data)), osPageSize)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		_ = unix.Close(fd) // the failed call's error is the one to return
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	if err := writeNonZero(fd, data); err != nil {
		_ = unix.Close(fd) // the failed call's error is the one to return
		return nil, err
	}
	return imageOf(fd, size)
}

// imageOf returns the image held in the in-memory file fd, of size bytes
// (page-rounded), which it owns from then on (closed on failure).
func imageOf(fd int, size uint64) (*memImage, error) {
	img := &memImage{fd: fd, size: size}
	if size > 0 {
		view, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			_ = unix.Close(fd) // the failed call's error is the one to return
			return nil, fmt.Errorf("mmap: %w", err)
		}
		img.data = view // page-rounded: a written tail past the data is reset to zeros too
		// A mapping of ours: munmap fails only on bad arguments.
		runtime.AddCleanup(img, func(b []byte) { _ = unix.Munmap(b) }, view)
	}
	return img, nil
}

// writeNonZero writes data to fd at offset 0, page by page, leaving pages
// of zeros as holes: they read as zeros and take no memory (a snapshot's
// free heap is mostly zeros).
func writeNonZero(fd int, data []byte) error {
	ps := int(osPageSize)
	for start := 0; start < len(data); start += ps {
		page := data[start:min(start+ps, len(data))]
		if nextNonZero(page, 0) == len(page) { // all zeros
			continue
		}
		for off := 0; off < len(page); {
			n, err := unix.Pwrite(fd, page[off:], int64(start+off))
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
			off += n
		}
	}
	return nil
}

// mapInto maps the image copy-on-write over the first img.size bytes of
// buf, a reservation made by reserveMemory.
func (img *memImage) mapInto(buf []byte) error {
	if uint64(cap(buf)) < img.size {
		return fmt.Errorf("memory image of %d bytes does not fit a %d-byte memory", img.size, cap(buf))
	}
	_, err := unix.MmapPtr(img.fd, 0, unsafe.Pointer(unsafe.SliceData(buf[:1])), uintptr(img.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	return err
}

// close closes the image's memfd; the mappings of it stay valid, and
// close fails only on a bad descriptor.
func (img *memImage) close() { _ = unix.Close(img.fd) }

// pagemap is this process's /proc/self/pagemap, or nil where it cannot
// be read. Its flag bits (not the frame numbers) are readable by any
// process.
var pagemap = sync.OnceValue(func() *os.File {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil
	}
	return f
})

// restoreWritten gives buf, which mapInto mapped from img, the image's
// contents again by copying the image over the pages written since: the
// pages the kernel gave a private copy (present and no longer the
// file's page) or swapped out. Pages only read still map the image and
// stay mapped, so the next run on the memory takes no fault for them.
// It finds the pages with PAGEMAP_SCAN (memscan_linux.go) or, on an
// older kernel, by reading an entry of the page map per page. It reports
// false when the page map cannot be read; s is scratch space.
func (img *memImage) restoreWritten(buf []byte, s *resetScratch) bool {
	f := pagemap()
	if f == nil || uint64(len(buf)) != img.size || len(buf) == 0 {
		return false
	}
	defer runtime.KeepAlive(img) // img.data is unmapped once img is unreachable
	var ok bool
	if s.regions, ok = scanWritten(buf, s.regions, func(from, to uint64) bool {
		copy(buf[from:to], img.data[from:])
		return true
	}); ok {
		return true
	}
	ps := int(osPageSize)
	pages := len(buf) / ps
	if cap(s.ents) < pages*8 {
		s.ents = make([]byte, pages*8)
	}
	ents := s.ents[:pages*8]
	first := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) / uintptr(ps)
	if _, err := f.ReadAt(ents, int64(first)*8); err != nil {
		return false
	}
	for i := range pages {
		e := binary.LittleEndian.Uint64(ents[i*8:])
		present, swapped, file := e&(1<<63) != 0, e&(1<<62) != 0, e&(1<<61) != 0
		if present && !file || swapped {
			copy(buf[i*ps:(i+1)*ps], img.data[i*ps:])
		}
	}
	return true
}

// resetScratch is restoreWritten's scratch space, kept by a memory
// between resets.
type resetScratch struct {
	regions []pageRegion // PAGEMAP_SCAN's output
	ents    []byte       // the page map's entries
}
