package main

// skein new: a workflow module skeleton that builds and passes its test
// as generated.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"text/template"
)

// skeinModule is the module path of this repository.
const skeinModule = "github.com/skeinrun/skein"

// validNewName is what `skein new` accepts as NAME: the folder, the Go
// module path and the workflow's name.
var validNewName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

func cmdNew(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("new", stderr)
	src := fs.String("skein-dir", "", "the skein checkout the module's go.mod points at with a replace (default: the one this folder is in, else the one this skein was built from)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return &exitError{code: exitUsage, err: errors.New("want exactly one NAME")}
	}
	name := pos[0]
	if !validNewName.MatchString(name) {
		return &exitError{code: exitUsage, err: fmt.Errorf("NAME %q: want a lower-case letter, then up to 63 lower-case letters, digits, '-' or '_' (it names the folder, the Go module and the workflow)", name)}
	}
	root, how, err := findSkeinDir(*src)
	if err != nil {
		return err
	}
	if _, err := os.Stat(name); err == nil {
		return fmt.Errorf("%s exists already: choose another NAME or remove it", name)
	}
	files, err := skeleton(name, root)
	if err != nil {
		return err
	}
	if err := os.Mkdir(name, 0o755); err != nil {
		return fmt.Errorf("new %s: %w", name, err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(name, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("new %s: %w", name, err)
		}
	}
	fmt.Fprintf(stdout, "wrote %s/: go.mod, go.sum, main.go (workflow %q), main_test.go, Makefile\n", name, name)
	fmt.Fprintf(stdout, "go.mod replaces %s with %s (%s): the module is not published\n", skeinModule, root, how)
	fmt.Fprintf(stdout, "next: cd %s && make build test   # %s.wasm, then its determinism check\n", name, name)
	return nil
}

// findSkeinDir returns the skein checkout to point the replace at: dir
// when given, else the checkout the working folder is in, else the one
// this binary was built from; and how it was found.
func findSkeinDir(dir string) (string, string, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", "", err
		}
		if !isSkeinRoot(abs) {
			return "", "", fmt.Errorf("--skein-dir %s: no go.mod of module %s there", dir, skeinModule)
		}
		return abs, "--skein-dir", nil
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isSkeinRoot(d) {
				return d, "the checkout this folder is in", nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	// The source path of this file, recorded when skein was built from a
	// checkout without -trimpath (go install, make skein).
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if d := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..")); isSkeinRoot(d) {
			return d, "the checkout skein was built from", nil
		}
	}
	return "", "", &exitError{code: exitUsage, err: fmt.Errorf("no skein checkout found: pass --skein-dir PATH (a clone of %s; the module is not published, so the new module's go.mod replaces it with that folder)", skeinModule)}
}

// isSkeinRoot reports whether dir holds the go.mod of this repository.
func isSkeinRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(first) == "module "+skeinModule
}

// newFile is one file of the skeleton.
type newFile struct {
	name string
	data []byte
}

// skeleton renders the files of module name against the checkout root.
// Its go.mod requires what skein requires, and its go.sum is skein's, so
// it builds and tests offline, without `go mod tidy`.
func skeleton(name, root string) ([]newFile, error) {
	reqs, goLine, err := skeinRequires(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return nil, fmt.Errorf("new %s: the checkout's go.sum: %w", name, err)
	}
	data := map[string]any{"Name": name, "Root": root, "Module": skeinModule, "Go": goLine, "Requires": reqs}
	var files []newFile
	for _, t := range []struct{ name, text string }{
		{"go.mod", newGoMod}, {"main.go", newMain}, {"main_test.go", newTest}, {"Makefile", newMakefile},
	} {
		var b bytes.Buffer
		if err := template.Must(template.New(t.name).Parse(t.text)).Execute(&b, data); err != nil {
			return nil, fmt.Errorf("new %s: %s: %w", name, t.name, err)
		}
		files = append(files, newFile{t.name, b.Bytes()})
	}
	return append(files, newFile{"go.sum", sum}), nil
}

// skeinRequires returns the module requirements of the checkout's go.mod
// ("path version" each) and its go version.
func skeinRequires(gomod string) (reqs []string, goLine string, err error) {
	f, err := os.Open(gomod)
	if err != nil {
		return nil, "", fmt.Errorf("the skein checkout's go.mod: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if c, _, ok := strings.Cut(line, "//"); ok {
			line = strings.TrimSpace(c)
		}
		switch {
		case strings.HasPrefix(line, "go "):
			goLine = strings.TrimPrefix(line, "go ")
		case line == "require (":
			in = true
		case in && line == ")":
			in = false
		case in && line != "":
			reqs = append(reqs, line)
		case strings.HasPrefix(line, "require "):
			reqs = append(reqs, strings.TrimPrefix(line, "require "))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	if goLine == "" {
		return nil, "", fmt.Errorf("%s has no go line", gomod)
	}
	return reqs, goLine, nil
}

const newGoMod = `module {{.Name}}

go {{.Go}}

require {{.Module}} v0.0.0-00010101000000-000000000000

// The skein module is not published: this points it at a local checkout.
replace {{.Module}} => {{.Root}}

// What skein itself requires (skeintest, in the test, runs the host).
require (
{{- range .Requires}}
	{{.}} // indirect
{{- end}}
)
`

const newMain = `// Command {{.Name}} is a skein workflow module: build it with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .
// (or make build). -buildmode=c-shared makes a reactor, whose instances
// start from a snapshot of the Go runtime's start-up; a plain go build
// (a command) works too, and starts slower.
package main

import (
	"github.com/skeinrun/skein/guest-sdk/skein"
)

// Input is the workflow's input (JSON).
type Input struct {
	Name string ` + "`json:\"name\"`" + `
}

// Decision settles the promise {run}.approve from outside:
// skein resolve RUN.approve --value '{"approved":true,"by":"ana"}'.
type Decision struct {
	Approved bool   ` + "`json:\"approved\"`" + `
	By       string ` + "`json:\"by\"`" + `
}

// greet records a greeting, waits for a decision, and answers.
func greet(ctx *skein.Context, in Input) (string, error) {
	hello, err := skein.Step(ctx, "hello", func(*skein.StepContext) (string, error) {
		return "hello " + in.Name, nil
	}, skein.ID("hello"))
	if err != nil {
		return "", err
	}
	d, err := skein.Promise[Decision](ctx, skein.ID("approve")).Get(ctx)
	if err != nil {
		return "", err
	}
	if !d.Approved {
		return hello + ", rejected by " + d.By, nil
	}
	return hello + ", approved by " + d.By, nil
}

func main() {
	skein.Register("{{.Name}}", greet)
	skein.Main()
}
`

const newTest = `package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/skeinrun/skein/skeintest"
)

// TestDeterminism builds this module to wasm and proves that its
// workflow replays exactly from every crash point, under many schedules.
// The check settles the promise approve itself, in turn by schedule: with
// a decision generated from its type, with an error, or not at all (the
// run then waits for it), so the code after the promise is checked too.
func TestDeterminism(t *testing.T) {
	wasm := filepath.Join(t.TempDir(), "{{.Name}}.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasm, ".")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build to wasm: %v\n%s", err, out)
	}
	r := skeintest.Check(t, wasm, "{{.Name}}", ` + "`" + `{"name":"ana"}` + "`" + `, skeintest.Options{Schedules: 12})
	for _, e := range r.Ends {
		if e.Status == "completed" {
			return
		}
	}
	t.Errorf("no schedule got past the promise: %+v", r.Ends)
}
`

const newMakefile = `# {{.Name}}: a skein workflow module.
build:
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o {{.Name}}.wasm .

test:
	go test ./...

.PHONY: build test
`
