//go:build linux

package engine

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The PAGEMAP_SCAN ioctl of /proc/self/pagemap (Linux 6.7 and later)
// returns the ranges of pages in a given state, so a reset learns which
// pages the guest wrote without reading an entry for every page of the
// memory and testing each: for a Go guest's 8 MB memory, 2,048 entries
// read and tested, for a few dozen written pages (RATIONALE.md, "Reused
// instances: reset to the snapshot, only where nothing else keeps
// state").

// pageRegion is the kernel's struct page_region.
type pageRegion struct {
	start, end, categories uint64
}

// pmScanArg is the kernel's struct pm_scan_arg.
type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages       uint64
	categoryInverted, categoryMask, categoryAnyofMask, returnMask uint64
}

const (
	pageIsFile    = 1 << 2
	pageIsPresent = 1 << 3
	pageIsSwapped = 1 << 4
	// pagemapScan is _IOWR('f', 16, struct pm_scan_arg).
	pagemapScan = 3<<30 | uint64(unsafe.Sizeof(pmScanArg{}))<<16 | 'f'<<8 | 16
	// scanRegions is how many ranges one scan returns at most.
	scanRegions = 64
)

// noPagemapScan is set once the kernel refused PAGEMAP_SCAN: resets read
// the page map's entries instead (restoreWritten), and snapshots the
// whole memory (snapshotImage).
var noPagemapScan atomic.Bool

// scanArg asks PAGEMAP_SCAN for the ranges of pages in [start, end) that
// are not the file's page and are present or swapped out (written), into
// vec.
func scanArg(start, end uint64, vec []pageRegion) pmScanArg {
	return pmScanArg{
		size: uint64(unsafe.Sizeof(pmScanArg{})), start: start, end: end,
		vec: uint64(uintptr(unsafe.Pointer(&vec[0]))), vecLen: uint64(len(vec)),
		categoryInverted: pageIsFile, categoryMask: pageIsFile,
		categoryAnyofMask: pageIsPresent | pageIsSwapped, returnMask: pageIsPresent | pageIsSwapped,
	}
}

// scanWritten calls each with the offsets in buf of every range of pages
// that PAGEMAP_SCAN finds written since buf was mapped from a file
// (present and not the file's page, or swapped out), in order. It
// reports false when the kernel cannot scan, or each returned false; the
// ranges before were handed to each. vec is scratch space, returned for
// the next call.
func scanWritten(buf []byte, vec []pageRegion, each func(from, to uint64) bool) ([]pageRegion, bool) {
	f := pagemap()
	if noPagemapScan.Load() || f == nil || len(buf) == 0 {
		return vec, false
	}
	if len(vec) < scanRegions {
		vec = make([]pageRegion, scanRegions)
	}
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	for start, end := base, base+uint64(len(buf)); start < end; {
		arg := scanArg(start, end, vec)
		n, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), uintptr(pagemapScan), uintptr(unsafe.Pointer(&arg)))
		if errno != 0 {
			if errno == unix.ENOTTY || errno == unix.EINVAL {
				noPagemapScan.Store(true)
			}
			return vec, false
		}
		for _, r := range vec[:n] {
			if !each(r.start-base, r.end-base) {
				return vec, false
			}
		}
		if arg.walkEnd <= start {
			return vec, false // no progress
		}
		start = arg.walkEnd
	}
	return vec, true
}
