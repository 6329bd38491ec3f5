package rust

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/shape"
	"github.com/skeinrun/skein/internal/testing/guestbuild"
	"github.com/skeinrun/skein/internal/testing/shapegen"
)

// The Rust SDK's decode of a typed value (skein::shape::decode) accepts
// exactly the values the host's check (shape.Check) accepts for the
// schema the SDK gives: the crate's test shape_corpus writes the schema
// of every type with a Shape, this test generates values along each
// schema's edges (internal/testing/shapegen), and the crate decodes each.
func TestRustShapeMatchesCheck(t *testing.T) {
	dir := t.TempDir()
	schemasFile, valuesFile, verdictsFile := filepath.Join(dir, "schemas"), filepath.Join(dir, "values"), filepath.Join(dir, "verdicts")
	guestbuild.CargoTestEnv(t, guestbuild.RustSDK, []string{"SKEIN_SHAPE_SCHEMAS=" + schemasFile}, "shape_corpus")
	schemas := map[string][]byte{}
	var names []string
	for _, line := range readLines(t, schemasFile) {
		name, schema, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("schema line %q", line)
		}
		names = append(names, name)
		schemas[name] = []byte(schema)
	}
	if len(names) < 20 {
		t.Fatalf("the crate gave %d schemas: %q", len(names), names)
	}

	r := rand.New(rand.NewPCG(32, 3))
	type sample struct {
		name  string
		value []byte
	}
	var samples []sample
	var lines strings.Builder
	for _, name := range names {
		for _, v := range shapegen.Values(r, schemas[name], 600) {
			samples = append(samples, sample{name, v})
			fmt.Fprintf(&lines, "%s\t%s\n", name, hex.EncodeToString(v))
		}
	}
	if err := os.WriteFile(valuesFile, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	guestbuild.CargoTestEnv(t, guestbuild.RustSDK, []string{"SKEIN_SHAPE_VALUES=" + valuesFile, "SKEIN_SHAPE_VERDICTS=" + verdictsFile}, "shape_corpus")
	verdicts := readLines(t, verdictsFile)
	if len(verdicts) != len(samples) {
		t.Fatalf("%d verdicts for %d values", len(verdicts), len(samples))
	}
	accepted := 0
	for i, s := range samples {
		checkErr := shape.Check(schemas[s.name], s.value)
		rustOK := verdicts[i] == "ok"
		if (checkErr == nil) != rustOK {
			t.Errorf("%s, value %s:\n check: %v\n rust:  %s\n schema: %s", s.name, s.value, checkErr, verdicts[i], schemas[s.name])
		}
		if rustOK {
			accepted++
		}
	}
	if accepted < len(samples)/5 || accepted > len(samples)*4/5 {
		t.Errorf("%d of %d values accepted; want between a fifth and four fifths", accepted, len(samples))
	}
	t.Logf("%d types, %d values, %d accepted", len(names), len(samples), accepted)
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
