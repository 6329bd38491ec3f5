package doccheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

// The layout table is the table of docs/design.md's section "The
// pieces": one row a folder of the tree, `| folder | what it holds |
// imports |`. A row's folder is a path from the root in backticks (a
// trailing "/" is allowed); it holds the Go package there, if any, and
// every package below it that has no row of its own. Its imports are the
// module's packages that those packages import (test files left out),
// other than each other, as paths from the root without the module's
// prefix, in backticks, separated by commas: `host`, `store/sqlite`; or
// the word nothing.
const (
	layoutDoc     = "docs/design.md"
	layoutSection = "## The pieces"
	layoutHeader  = "| folder | what it holds | imports |"
)

// layoutRow is a row of the layout table.
type layoutRow struct {
	line    int             // its line in layoutDoc, from 1
	folder  string          // from the root, without a trailing "/"
	imports map[string]bool // as the row spells them
}

// backticked is a path in backticks in a cell of the table.
var backticked = regexp.MustCompile("`([^`]*)`")

// TestLayoutTable: docs/design.md's layout table is true to `go list`:
// every package of the module (every one with non-test files, on the
// host's platform or on wasip1, examples included) is held by a row,
// every row names a folder of the tree, and each row's imports column
// lists exactly the module's packages that the row's packages import.
func TestLayoutTable(t *testing.T) {
	root := wasmbuild.Root()
	rows := readLayoutTable(t, filepath.Join(root, layoutDoc))
	pkgs := modulePackages(t, root)
	byFolder := map[string]*layoutRow{}
	for _, r := range rows {
		if byFolder[r.folder] != nil {
			t.Errorf("%s:%d: a second row for %s", layoutDoc, r.line, r.folder)
		}
		byFolder[r.folder] = r
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(r.folder))); err != nil || !fi.IsDir() {
			t.Errorf("%s:%d: the row for %s names no folder of the tree", layoutDoc, r.line, r.folder)
		}
	}
	want := map[*layoutRow]map[string]bool{}
	for _, pkg := range slices.Sorted(maps.Keys(pkgs)) {
		r := rowOf(byFolder, pkg)
		if r == nil {
			t.Errorf("%s: package %s has no row (add one, or one for a folder above it)", layoutDoc, pkg)
			continue
		}
		if want[r] == nil {
			want[r] = map[string]bool{}
		}
		for imp := range pkgs[pkg] {
			if rowOf(byFolder, imp) != r {
				want[r][imp] = true
			}
		}
	}
	for _, r := range rows {
		for _, imp := range slices.Sorted(maps.Keys(want[r])) {
			if !r.imports[imp] {
				t.Errorf("%s:%d: %s imports %s, which its row does not list", layoutDoc, r.line, r.folder, imp)
			}
		}
		for _, imp := range slices.Sorted(maps.Keys(r.imports)) {
			if !want[r][imp] {
				t.Errorf("%s:%d: the row for %s lists %s, which it does not import", layoutDoc, r.line, r.folder, imp)
			}
		}
	}
}

// rowOf returns the row that holds package pkg: the row of its folder or
// of the nearest folder above it; nil if none.
func rowOf(byFolder map[string]*layoutRow, pkg string) *layoutRow {
	for p := pkg; ; {
		if r := byFolder[p]; r != nil {
			return r
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return nil
		}
		p = p[:i]
	}
}

// readLayoutTable reads the rows of the layout table of the page at
// path; a row it cannot read is an error of the test.
func readLayoutTable(t *testing.T, path string) []*layoutRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.Index(lines, layoutSection)
	if start < 0 {
		t.Fatalf("%s has no section %q", layoutDoc, layoutSection)
	}
	i := start + 1
	for i < len(lines) && !strings.HasPrefix(lines[i], "|") {
		i++
	}
	if i >= len(lines) || lines[i] != layoutHeader {
		t.Fatalf("%s: the section %q has no table with the header %s", layoutDoc, layoutSection, layoutHeader)
	}
	var rows []*layoutRow
	for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		if r, err := parseLayoutRow(lines[i]); err != nil {
			t.Errorf("%s:%d: %v", layoutDoc, i+1, err)
		} else {
			r.line = i + 1
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: the layout table has no rows", layoutDoc)
	}
	return rows
}

// parseLayoutRow reads one row of the table.
func parseLayoutRow(line string) (*layoutRow, error) {
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if len(cells) != 3 {
		return nil, errors.New("a row of the layout table has three cells: folder, what it holds, imports")
	}
	folder := strings.TrimSpace(cells[0])
	m := backticked.FindStringSubmatch(folder)
	if m == nil || m[0] != folder {
		return nil, errors.New("a row's folder is one path in backticks: " + folder)
	}
	r := &layoutRow{folder: strings.TrimSuffix(m[1], "/"), imports: map[string]bool{}}
	imports := strings.TrimSpace(cells[2])
	if imports == "nothing" {
		return r, nil
	}
	for _, m := range backticked.FindAllStringSubmatch(imports, -1) {
		r.imports[strings.TrimSuffix(m[1], "/")] = true
	}
	if rest := strings.Trim(backticked.ReplaceAllString(imports, ""), ", "); rest != "" || len(r.imports) == 0 {
		return nil, errors.New("the imports of the row for " + r.folder + " are `paths` separated by commas, or nothing: " + imports)
	}
	return r, nil
}

// listedPackage is what `go list -json` says of a package.
type listedPackage struct {
	ImportPath string
	GoFiles    []string
	Imports    []string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// modulePackages returns the module's packages that have non-test files
// on the host's platform or on wasip1 (the guest SDK's), each with the
// module's packages it imports there, as paths without the module's
// prefix.
func modulePackages(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	pkgs := map[string]map[string]bool{}
	for _, env := range [][]string{nil, {"GOOS=wasip1", "GOARCH=wasm"}} {
		cmd := exec.Command("go", "list", "-e", "-json", "./...")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %v: %v\n%s", env, err, stderr.Bytes())
		}
		for dec := json.NewDecoder(bytes.NewReader(out)); ; {
			var p listedPackage
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("go list %v: %v", env, err)
			}
			addPackage(t, pkgs, p)
		}
	}
	return pkgs
}

// addPackage adds what go list said of p to pkgs.
func addPackage(t *testing.T, pkgs map[string]map[string]bool, p listedPackage) {
	t.Helper()
	if p.Module == nil || len(p.GoFiles) == 0 {
		return // test files only (or none on this platform)
	}
	if p.Error != nil {
		t.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
	}
	prefix := p.Module.Path + "/"
	rel := strings.TrimPrefix(p.ImportPath, prefix)
	if pkgs[rel] == nil {
		pkgs[rel] = map[string]bool{}
	}
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, prefix) {
			pkgs[rel][strings.TrimPrefix(imp, prefix)] = true
		}
	}
}
