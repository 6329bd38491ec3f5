package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// guestSDK is the Go guest SDK, and apiPage the page that lists its API.
const (
	guestSDK = "guest-sdk/skein"
	apiPage  = "docs/workflows.md"
)

// TestGuestAPIListed: the code block under "The guest API" in
// docs/workflows.md lists every name guest-sdk/skein exports, in every
// build of it: each function, type, constant and variable by its
// declaration (func Name, type Name, const Name, var Name), each method
// of an exported type by its receiver (func (f Future[T]) Get) or on its
// type's line, and each field of an exported struct by its name.
func TestGuestAPIListed(t *testing.T) {
	r := loadRepo(t)
	block := apiBlock(t, r.doc(t, apiPage))
	for _, e := range exports(t, r) {
		if !e.listedIn(block) {
			t.Errorf("%s: the guest API of %s does not list %s (go doc -all ./%s)", apiPage, guestSDK, e, guestSDK)
		}
	}
}

// apiBlock is the first ```go block after the heading "The guest API".
func apiBlock(t *testing.T, d *doc) string {
	t.Helper()
	in, found := false, false
	var b strings.Builder
	for i, l := range d.lines {
		switch {
		case !d.fenced[i] && strings.HasPrefix(l, "#"):
			found = normHeading(strings.TrimLeft(l, "# ")) == "the guest api"
		case found && !in && strings.TrimSpace(l) == "```go":
			in = true
		case in && d.fenced[i] && strings.TrimSpace(l) == "```":
			return b.String()
		case in:
			b.WriteString(l + "\n")
		}
	}
	t.Fatalf("%s has no ```go block under a heading \"The guest API\"", apiPage)
	return ""
}

// export is one exported name of the SDK: kind is func, method, type,
// const, var or field; of is the type of a method or field.
type export struct {
	kind, name, of string
}

func (e export) String() string {
	if e.of != "" {
		return e.kind + " " + e.of + "." + e.name
	}
	return e.kind + " " + e.name
}

func (e export) listedIn(block string) bool {
	switch e.kind {
	case "func":
		return regexp.MustCompile(`(?m)^func ` + e.name + `[\[(]`).MatchString(block)
	case "type", "const", "var":
		return regexp.MustCompile(`(?m)^` + e.kind + ` ` + e.name + `\b`).MatchString(block)
	case "method":
		recv := `(?m)^func \(\w+ \*?` + e.of + `(\[\w+\])?\) ` + e.name + `\(`
		onTypeLine := `(?m)^type ` + e.of + `\b.*\b` + e.name + `\(`
		return regexp.MustCompile(recv).MatchString(block) || regexp.MustCompile(onTypeLine).MatchString(block)
	default: // field
		return regexp.MustCompile(`\b` + e.name + `\b`).MatchString(block)
	}
}

// exports lists what the SDK's files (tests left out, every build tag
// in) export.
func exports(t *testing.T, r *repo) []export {
	t.Helper()
	fset := token.NewFileSet()
	var out []export
	seen := map[export]bool{}
	add := func(e export) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, rel := range r.withExt(".go") {
		if filepath.ToSlash(filepath.Dir(rel)) != guestSDK || strings.HasSuffix(rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(r.root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			declExports(decl, add)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s exports nothing: the test reads the wrong folder", guestSDK)
	}
	return out
}

func declExports(decl ast.Decl, add func(export)) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return
		}
		if d.Recv == nil {
			add(export{kind: "func", name: d.Name.Name})
		} else if recv := recvType(d.Recv.List[0].Type); ast.IsExported(recv) {
			add(export{kind: "method", name: d.Name.Name, of: recv})
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					add(export{kind: "type", name: s.Name.Name})
					fieldExports(s, add)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						add(export{kind: d.Tok.String(), name: n.Name})
					}
				}
			}
		}
	}
}

func fieldExports(s *ast.TypeSpec, add func(export)) {
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		return
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				add(export{kind: "field", name: n.Name, of: s.Name.Name})
			}
		}
	}
}

// recvType is the name of a receiver's type: T, *T, T[X], *T[X].
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
