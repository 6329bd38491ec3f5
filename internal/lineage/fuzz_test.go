package lineage

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// fuzzNames are the names a byte program can use: unnamed (often), valid,
// invalid, and long ones that reach MaxKeyLen in a few levels.
var fuzzNames = []string{
	"", "", "", "", "", "", "a", "b", "fanout", "t", "t2x", "iter-1",
	"1", "t1", "a.b", "a b", "", strings.Repeat("L", 100), strings.Repeat("é", 140),
}

// checkProgram interprets prog two bytes at a time: the first picks the
// kind of op and its name, the second the scope it runs in (any scope made
// so far) and, for a fork, how many branches to open. It checks every key
// is unique, at most MaxKeyLen, parses back to itself, and lies in its
// scope; and every error is a *StepIDError that consumed nothing.
func checkProgram(t *testing.T, prog []byte) {
	t.Helper()
	scopes := []*Scope{Root()}
	seen := map[string]bool{}
	record := func(s *Scope, key string, isOp bool) {
		if seen[key] {
			t.Fatalf("key %q minted twice", key)
		}
		seen[key] = true
		if isOp && keyLen(key) > MaxKeyLen {
			t.Fatalf("key %q longer than %d", key, MaxKeyLen)
		}
		p, err := Parse(key)
		if err != nil || p.String() != key {
			t.Fatalf("Parse(%q) = %#v, %v", key, p, err)
		}
		if p.ScopeKey() != s.Key() {
			t.Fatalf("key %q minted in scope %q", key, s.Key())
		}
	}
	for i := 0; i+1 < len(prog); i += 2 {
		a, b := prog[i], prog[i+1]
		s := scopes[int(b)%len(scopes)]
		name := fuzzNames[int(a>>2)%len(fuzzNames)]
		before := s.Position()
		var key string
		var err error
		switch a & 3 {
		case 0, 1:
			if key, err = s.Op(name); err == nil {
				record(s, key, true)
			}
		case 2:
			var c *Scope
			if c, err = s.Spawn(name); err == nil {
				key = c.Key()
				record(s, key, true)
				scopes = append(scopes, c)
			}
		case 3:
			var f *Fork
			if f, err = s.Fork(name); err == nil {
				key = f.Key()
				record(s, key, true)
				for j := range int(b>>6) + 1 {
					bs := f.Branch(j)
					record(&Scope{key: key}, bs.Key(), false)
					scopes = append(scopes, bs)
				}
			}
		}
		if err != nil {
			var e *StepIDError
			if !errors.As(err, &e) || e.Scope != s.Key() || e.Name != name {
				t.Fatalf("op %q in %q: error %#v", name, s.Key(), err)
			}
			if name == "" && e.Rule != RuleTooLong {
				t.Fatalf("unnamed op in %q: rule %s", s.Key(), e.Rule)
			}
			if s.Position() != before {
				t.Fatalf("rejected op %q in %q consumed a position", name, s.Key())
			}
			continue
		}
		if s.Position() != before+1 {
			t.Fatalf("op %q in %q: Position %d -> %d", name, s.Key(), before, s.Position())
		}
		if name != "" && !strings.HasSuffix(key, "."+name) && key != name {
			t.Fatalf("named op %q got key %q", name, key)
		}
	}
}

// FuzzKeys: programs built from fuzz bytes never mint one key twice, and
// every key round-trips through Parse.
func FuzzKeys(f *testing.F) {
	f.Add([]byte{0, 0, 2, 0, 0, 1, 0, 1, 2, 0, 0, 2, 0, 2})
	f.Add([]byte{3, 0xc0, 0, 1, 0, 2, 3, 3, 4, 4})
	f.Add([]byte{0x44, 0, 0x47, 0, 0x4a, 0, 0x4a, 1, 0x4a, 2, 0x4a, 3})
	f.Add([]byte(strings.Repeat("\x02\x00\x02\x01", 60)))
	f.Fuzz(checkProgram)
}

// validKey is Parse's contract, written independently.
func validKey(s string) bool {
	if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// FuzzParse: Parse never panics, accepts exactly the well-formed keys, and
// round-trips what it accepts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "1", "t2.1", "fanout.0.attach-ip", "a..b", ".", "a b", "é.\u2003", "\xff.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := Parse(s)
		if (err == nil) != validKey(s) {
			t.Fatalf("Parse(%q) error = %v, valid = %v", s, err, validKey(s))
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrMalformed", s, err)
			}
			return
		}
		if k.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, k.String())
		}
		for _, seg := range append(k.Scope, k.Last) {
			if seg == "" || strings.Contains(seg, ".") {
				t.Fatalf("Parse(%q) segment %q", s, seg)
			}
		}
		if want := s[:max(0, strings.LastIndex(s, "."))]; k.ScopeKey() != want {
			t.Fatalf("Parse(%q).ScopeKey() = %q, want %q", s, k.ScopeKey(), want)
		}
	})
}
