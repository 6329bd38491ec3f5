//go:build linux

package engine

import "golang.org/x/sys/unix"

// snapshotImage returns an image of mem, the memory of an instance that
// mapInto mapped from base, after the instance ran (a reactor's
// start-up): base's file copied by the kernel, then the pages the
// instance wrote, found with PAGEMAP_SCAN (memscan_linux.go). Reading
// mem whole instead (newMemImage) takes a page fault on every page the
// start-up never touched, most of a Go guest's 8 MB. It returns nil when
// the kernel cannot do either; the caller then reads mem.
func snapshotImage(base *memImage, mem []byte) *memImage {
	if noPagemapScan.Load() || pagemap() == nil || uint64(len(mem)) < base.size {
		return nil
	}
	fd, err := unix.MemfdCreate("skein-memory-image", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	size := roundUp(uint64(len(mem)), osPageSize)
	if unix.Ftruncate(fd, int64(size)) != nil || !copyFile(base.fd, fd, int(base.size)) || !writeWritten(fd, mem, base.size) {
		_ = unix.Close(fd) // no snapshot image: the caller falls back
		return nil
	}
	img, err := imageOf(fd, size)
	if err != nil {
		return nil
	}
	return img
}

// copyFile copies n bytes at the start of the file from to the file to,
// in the kernel; false when it cannot.
func copyFile(from, to, n int) bool {
	var off, toOff int64
	for n > 0 {
		k, err := unix.CopyFileRange(from, &off, to, &toOff, n, 0)
		if err != nil || k == 0 {
			return false
		}
		n -= k
	}
	return true
}

// writeWritten writes to fd the pages of mem the instance wrote since its
// mapping (scanWritten), leaving as holes those past the first mapped
// bytes that hold only zeros; false when the page map cannot be scanned
// or a write fails.
func writeWritten(fd int, mem []byte, mapped uint64) bool {
	_, ok := scanWritten(mem, nil, func(from, to uint64) bool {
		for p := from; p < to; p += osPageSize {
			page := mem[p:min(p+osPageSize, uint64(len(mem)))]
			if p >= mapped && nextNonZero(page, 0) == len(page) {
				continue
			}
			if _, err := unix.Pwrite(fd, page, int64(p)); err != nil {
				return false
			}
		}
		return true
	})
	return ok
}
