package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64 // seconds, when a test or package ends
	ImportPath string  // build-output and build-fail events
}

// timed is a top-level test and how long it took.
type timed struct {
	name    string
	seconds float64
}

// summary accumulates the events of one `go test -json` run.
type summary struct {
	w                     io.Writer
	run, skipped, failed  int
	pkgFailed, buildFails int
	outputs               map[string]*strings.Builder // per package and test, until it ends
	groups                map[string]*group           // skipped groups by name
	skips                 []string                    // the ids of skipped tests, in order
	times                 []timed                     // the top-level tests that ran
}

// group is a skipped group of tests (internal/testing/testgroup).
type group struct {
	name, enable string
	tests        []string
}

// skipGroup matches the tail internal/testing/testgroup.Message writes.
var skipGroup = regexp.MustCompile(`\[skip group ([^;\]]+); enable: ([^\]]+)\]`)

func newSummary(w io.Writer) *summary {
	return &summary{w: w, outputs: map[string]*strings.Builder{}, groups: map[string]*group{}}
}

// read consumes the stream; lines that are not events are printed as
// they are (the go command's own errors).
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(s.w, string(line))
			continue
		}
		s.event(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading go test -json: %w", err)
	}
	return nil
}

func (s *summary) event(e event) {
	id := e.Package + "." + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.w, e.Output)
	case e.Action == "build-fail":
		s.buildFails++
	case e.Test == "" && e.Action == "output":
		if out := e.Output; !strings.HasPrefix(out, "PASS") && !strings.HasPrefix(out, "=== ") {
			fmt.Fprint(s.w, out)
		}
	case e.Test == "" && e.Action == "fail":
		s.pkgFailed++
	case e.Test == "":
	case e.Action == "output":
		b := s.outputs[id]
		if b == nil {
			b = &strings.Builder{}
			s.outputs[id] = b
		}
		b.WriteString(e.Output)
	case e.Action == "pass":
		s.run++
		s.time(e)
		delete(s.outputs, id)
	case e.Action == "fail":
		s.run++
		s.failed++
		s.time(e)
		fmt.Fprintf(s.w, "=== FAIL %s: its output\n", shortPkg(id))
		if b := s.outputs[id]; b != nil {
			fmt.Fprint(s.w, b.String())
		}
		delete(s.outputs, id)
	case e.Action == "skip":
		// Its output is kept: a skip's message may follow the event.
		s.skipped++
		s.skips = append(s.skips, id)
	}
}

// time keeps how long a top-level test took.
func (s *summary) time(e event) {
	if !strings.Contains(e.Test, "/") {
		s.times = append(s.times, timed{shortPkg(e.Package) + "." + e.Test, e.Elapsed})
	}
}

// slowest is the line naming the slowest tests, "" without any.
func (s *summary) slowest(n int) string {
	ts := slices.Clone(s.times)
	slices.SortStableFunc(ts, func(a, b timed) int { return cmp.Compare(b.seconds, a.seconds) })
	var parts []string
	for _, t := range ts[:min(n, len(ts))] {
		parts = append(parts, fmt.Sprintf("%s %.1fs", t.name, t.seconds))
	}
	if len(parts) == 0 {
		return ""
	}
	return "slowest tests: " + strings.Join(parts, ", ") + "\n"
}

// classify files each skipped test under its group, and returns the
// other skips, each with the reason it printed.
func (s *summary) classify() (others []string) {
	for _, id := range s.skips {
		text := ""
		if b := s.outputs[id]; b != nil {
			text = b.String()
		}
		name := shortPkg(id)
		if m := skipGroup.FindStringSubmatch(text); m != nil {
			g := s.groups[m[1]]
			if g == nil {
				g = &group{name: m[1], enable: m[2]}
				s.groups[m[1]] = g
			}
			g.tests = append(g.tests, name)
			continue
		}
		others = append(others, name+": "+skipReason(text))
	}
	return others
}

// skipReason is the message of a skip, from the test's output.
func skipReason(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return "(no reason given)"
	}
	return lines[len(lines)-1]
}

func shortPkg(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/skeinrun/skein/")
}

func (s *summary) anyFailed() bool { return s.failed > 0 || s.pkgFailed > 0 || s.buildFails > 0 }

// print prints the summary line and the skipped groups.
func (s *summary) print() {
	fmt.Fprintf(s.w, "\ntests: %d run, %d skipped, %d failed", s.run, s.skipped, s.failed)
	if s.pkgFailed > 0 || s.buildFails > 0 {
		fmt.Fprintf(s.w, " (%d packages failed, %d builds failed)", s.pkgFailed, s.buildFails)
	}
	fmt.Fprintln(s.w)
	fmt.Fprint(s.w, s.slowest(8))
	others := s.classify()
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		g := s.groups[n]
		fmt.Fprintf(s.w, "skipped group %s (%d tests; enable: %s): %s\n", g.name, len(g.tests), g.enable, strings.Join(g.tests, ", "))
	}
	for _, o := range others {
		fmt.Fprintf(s.w, "skipped %s\n", o)
	}
}
