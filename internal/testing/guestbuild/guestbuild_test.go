package guestbuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// A build is cached by the hash of its sources: the same sources give the
// same module file, built once; other sources give another file.
func TestCacheKeyedBySources(t *testing.T) {
	a := C(t, "testdata/c/race.c")
	b := C(t, "testdata/c/race.c")
	if a != b {
		t.Fatalf("two builds of the same sources: %s and %s", a, b)
	}
	wasm, err := os.ReadFile(a)
	if err != nil || len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		t.Fatalf("%s is not a wasm module (%v)", a, err)
	}
	if c := C(t, "testdata/c/ops.c"); c == a {
		t.Fatalf("race.c and ops.c share the cached module %s", c)
	}
	// A copy of race.c with one more line is a new build.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "testdata", "c", "race.c"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"glue.h"} {
		b, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "testdata", "c", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "race.c"), append(src, []byte("\n/* changed */\n")...), 0o644)
	rel, err := filepath.Rel(wasmbuild.Root(), filepath.Join(dir, "race.c"))
	if err != nil {
		t.Fatal(err)
	}
	d := C(t, rel)
	if d == a {
		t.Fatalf("a changed source reused the cached module %s", d)
	}
	// So is the same race.c with a changed header beside it.
	os.WriteFile(filepath.Join(dir, "race.c"), src, 0o644)
	e := C(t, rel)
	glue, _ := os.ReadFile(filepath.Join(dir, "glue.h"))
	os.WriteFile(filepath.Join(dir, "glue.h"), append(glue, []byte("\n/* changed */\n")...), 0o644)
	if f := C(t, rel); f == e || f == d {
		t.Fatalf("a changed header reused the cached module %s", f)
	}
}
