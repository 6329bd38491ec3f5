//go:build !linux

package engine

import "errors"

// memImage is a module's initial linear memory; only Linux maps it
// copy-on-write (memimage_linux.go). Elsewhere modules keep their data
// segments (merged) and instances copy them.
type memImage struct {
	size uint64
	data []byte
}

func newMemImage([]byte) (*memImage, error) {
	return nil, errors.New("copy-on-write memory images need Linux")
}

func (img *memImage) mapInto([]byte) error { return errors.New("unsupported") }

func (img *memImage) close() {}

func (img *memImage) restoreWritten([]byte, *resetScratch) bool { return false }

// resetScratch is restoreWritten's scratch space (none here).
type resetScratch struct{}

// snapshotImage needs Linux (snapimage_linux.go).
func snapshotImage(*memImage, []byte) *memImage { return nil }
