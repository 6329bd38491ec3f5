package host

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// abi/README.md §2.1 lists exactly the WASI functions a module may import:
// those the host provides.
func TestWASIListInABIReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "abi", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "### 2.1 The WASI functions")
	end := strings.Index(doc, "### 2.2 ")
	if start < 0 || end < start {
		t.Fatal("abi/README.md has no section 2.1 (The WASI functions) before 2.2")
	}
	var listed []string
	for _, line := range strings.Split(doc[start:end], "\n") {
		if cell, ok := strings.CutPrefix(line, "| `"); ok {
			first, _, _ := strings.Cut("`"+cell, " |")
			for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
				listed = append(listed, m[1])
			}
		}
	}
	h := newTestHost(t, Config{})
	provided := engine.WASIFunctions(h.eng)
	slices.Sort(listed)
	slices.Sort(provided)
	if !slices.Equal(listed, provided) {
		t.Fatalf("abi/README.md §2.1 lists %d functions, the host provides %d\nlisted:   %q\nprovided: %q", len(listed), len(provided), listed, provided)
	}
}
