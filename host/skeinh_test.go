package host

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/skeinrun/skein/abi"
	"github.com/skeinrun/skein/host/internal/engine"
	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/internal/testing/wasmbuild"
)

var (
	hImport = regexp.MustCompile(`SKEIN_IMPORT\("(\w+)"\)\s*([\w ]+?)\s+(\w+)\(([^)]*)\);`)
	hDefine = regexp.MustCompile(`(?m)^#define (SKEIN_\w+)[ \t]+(\S+)`)
)

// cType maps a C parameter or result type of skein.h to its wasm type on
// wasm32; "" for void.
func cType(t *testing.T, decl string) string {
	decl = strings.TrimSpace(decl)
	switch {
	case strings.Contains(decl, "*"):
		return engine.I32.String() // a pointer
	case decl == "void":
		return ""
	}
	typ := strings.Fields(strings.TrimPrefix(decl, "const "))[0]
	switch typ {
	case "uint32_t", "int32_t":
		return engine.I32.String()
	case "uint64_t", "int64_t":
		return engine.I64.String()
	}
	t.Fatalf("skein.h: unknown C type %q", decl)
	return ""
}

// abiConstants evaluates the exported constants of abi/abi.go.
func abiConstants(t *testing.T) map[string]constant.Value {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(wasmbuild.Root(), "abi", "abi.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{}).Check("abi", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]constant.Value{}
	for _, name := range pkg.Scope().Names() {
		if c, ok := pkg.Scope().Lookup(name).(*types.Const); ok && c.Exported() {
			out[name] = c.Val()
		}
	}
	return out
}

// cName is the skein.h name of an abi constant: OpStep -> SKEIN_OP_STEP,
// StateIDError -> SKEIN_STATE_ID_ERROR.
func cName(goName string) string {
	if goName == "Version" {
		return "SKEIN_ABI_VERSION"
	}
	rs := []rune(goName)
	var b strings.Builder
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return "SKEIN_" + b.String()
}

// abi/skein.h declares exactly the host functions of ABI v1, with the
// import names of abi/abi.go and the wasm signatures the host checks at
// deploy (hostSigs), and defines exactly the constants of abi/abi.go with
// their values. Editing one side without the other fails here.
func TestSkeinHeaderMatchesABI(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "abi", "skein.h"))
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`\s+`).ReplaceAllString(string(src), " ")
	consts := abiConstants(t)

	// Imports: one per host function, named and typed as the host wants.
	imports := map[string]bool{}
	for _, m := range hImport.FindAllStringSubmatch(text, -1) {
		name, ret, fn, params := m[1], m[2], m[3], m[4]
		if imports[name] {
			t.Errorf("skein.h imports %q twice", name)
		}
		imports[name] = true
		if fn != "skein_"+name {
			t.Errorf("skein.h: import %q is declared as %s, want skein_%s", name, fn, name)
		}
		ft, ok := exec.HostFnType(name)
		sig := [2][]engine.ValueType{ft.Params, ft.Results}
		if !ok {
			t.Errorf("skein.h imports %q, which the host does not provide", name)
			continue
		}
		var got []string
		if p := strings.TrimSpace(params); p != "void" {
			for _, decl := range strings.Split(p, ",") {
				got = append(got, cType(t, decl))
			}
		}
		want := strings.Split(strings.Trim(typeNames(sig[0]), "()"), ",")
		if len(sig[0]) == 0 {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("skein.h: %s takes %v, the host %v", fn, got, want)
		}
		if r := cType(t, ret); r != strings.Trim(typeNames(sig[1]), "()") {
			t.Errorf("skein.h: %s returns %q, the host %s", fn, r, typeNames(sig[1]))
		}
	}
	for _, name := range exec.HostFnNames() {
		if !imports[name] {
			t.Errorf("skein.h does not declare the host function %q", name)
		}
	}
	fns := 0
	for goName, v := range consts {
		if strings.HasPrefix(goName, "Fn") {
			fns++
			if s := constant.StringVal(v); !imports[s] {
				t.Errorf("abi.%s = %q is not declared in skein.h", goName, s)
			}
		}
	}
	if fns != len(exec.HostFnNames()) || len(imports) != len(exec.HostFnNames()) {
		t.Errorf("abi.go has %d Fn constants, the host %d functions, skein.h %d imports", fns, len(exec.HostFnNames()), len(imports))
	}

	// Constants: the same names and values both ways.
	defines := map[string]string{}
	for _, m := range hDefine.FindAllStringSubmatch(string(src), -1) {
		defines[m[1]] = m[2]
	}
	special := map[string]string{
		"SKEIN_MODULE": strconv.Quote(abi.Module),
		// The fields before the strings: the message less its last fields
		// (parent_close and on_exhausted, after the strings).
		"SKEIN_OP_OPTIONS_FIXED": strconv.Itoa(len(abi.AppendOpOptions(nil, abi.OpOptions{})) - 8),
	}
	for name, want := range special {
		if defines[name] != want {
			t.Errorf("skein.h: %s is %q, want %q", name, defines[name], want)
		}
		delete(defines, name)
	}
	for goName, v := range consts {
		if strings.HasPrefix(goName, "Fn") || goName == "Module" {
			continue
		}
		c := cName(goName)
		got, ok := defines[c]
		if !ok {
			t.Errorf("skein.h does not define %s (abi.%s = %s)", c, goName, v)
			continue
		}
		if got != v.ExactString() {
			t.Errorf("skein.h: %s is %s, abi.%s is %s", c, got, goName, v.ExactString())
		}
		delete(defines, c)
	}
	for name := range defines {
		t.Errorf("skein.h defines %s, which abi/abi.go does not have", name)
	}
}

// typeNames lists value types as "(i32,i64)".
func typeNames(ts []engine.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return "(" + strings.Join(names, ",") + ")"
}
