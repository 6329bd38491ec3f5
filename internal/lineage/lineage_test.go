package lineage

import (
	"errors"
	"strings"
	"testing"
)

func mustOp(t *testing.T, s *Scope, name string) string {
	t.Helper()
	k, err := s.Op(name)
	if err != nil {
		t.Fatalf("Op(%q) in %q: %v", name, s.Key(), err)
	}
	return k
}

func mustSpawn(t *testing.T, s *Scope, name string) *Scope {
	t.Helper()
	c, err := s.Spawn(name)
	if err != nil {
		t.Fatalf("Spawn(%q) in %q: %v", name, s.Key(), err)
	}
	return c
}

func mustFork(t *testing.T, s *Scope, name string) *Fork {
	t.Helper()
	f, err := s.Fork(name)
	if err != nil {
		t.Fatalf("Fork(%q) in %q: %v", name, s.Key(), err)
	}
	return f
}

func eq(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// TestReferenceTasks is the lineage-ids reference: a sleep in root and two
// spawned chains of two calls each.
func TestReferenceTasks(t *testing.T) {
	r := Root()
	eq(t, "root key", r.Key(), "")
	eq(t, "sleep", mustOp(t, r, ""), "1")
	a := mustSpawn(t, r, "")
	eq(t, "chain_a scope", a.Key(), "t2")
	eq(t, "slow", mustOp(t, a, ""), "t2.1")
	eq(t, "mark a", mustOp(t, a, ""), "t2.2")
	b := mustSpawn(t, r, "")
	eq(t, "chain_b scope", b.Key(), "t3")
	eq(t, "fast", mustOp(t, b, ""), "t3.1")
	eq(t, "mark b", mustOp(t, b, ""), "t3.2")
}

// TestReferenceTasksInterleaved runs the same program with the chains'
// ops interleaved the other way (as a different race outcome would); the
// keys must not change.
func TestReferenceTasksInterleaved(t *testing.T) {
	r := Root()
	eq(t, "sleep", mustOp(t, r, ""), "1")
	a := mustSpawn(t, r, "")
	b := mustSpawn(t, r, "")
	eq(t, "fast", mustOp(t, b, ""), "t3.1")
	eq(t, "mark b", mustOp(t, b, ""), "t3.2")
	eq(t, "slow", mustOp(t, a, ""), "t2.1")
	eq(t, "mark a", mustOp(t, a, ""), "t2.2")
}

// TestReferenceFork is the step-identity reference, positional and named.
func TestReferenceFork(t *testing.T) {
	r := Root()
	eq(t, "create_vm", mustOp(t, r, ""), "1")
	f := mustFork(t, r, "")
	eq(t, "fork", f.Key(), "2")
	eq(t, "branch 0 scope", f.Branch(0).Key(), "2.0")
	eq(t, "attach", mustOp(t, f.Branch(0), ""), "2.0.1")
	eq(t, "setup_sg", mustOp(t, f.Branch(1), ""), "2.1.1")

	r = Root()
	eq(t, "create-vm", mustOp(t, r, "create-vm"), "create-vm")
	f = mustFork(t, r, "fanout")
	eq(t, "fork", f.Key(), "fanout")
	eq(t, "attach-ip", mustOp(t, f.Branch(0), "attach-ip"), "fanout.0.attach-ip")
	eq(t, "setup-sg", mustOp(t, f.Branch(1), "setup-sg"), "fanout.1.setup-sg")
	if r.Position() != 2 {
		t.Errorf("root Position = %d, want 2", r.Position())
	}
}

func TestNamedSpawnAndNesting(t *testing.T) {
	r := Root()
	eq(t, "op", mustOp(t, r, ""), "1")
	w := mustSpawn(t, r, "worker")
	eq(t, "worker", w.Key(), "worker")
	eq(t, "worker op", mustOp(t, w, ""), "worker.1")
	eq(t, "op after named spawn", mustOp(t, r, ""), "3")
	u := mustSpawn(t, r, "")
	eq(t, "unnamed spawn", u.Key(), "t4")
	eq(t, "nested spawn", mustSpawn(t, u, "").Key(), "t4.t1")
	f := mustFork(t, u, "")
	eq(t, "nested fork", f.Key(), "t4.2")
	eq(t, "nested branch", mustSpawn(t, f.Branch(3), "").Key(), "t4.2.3.t1")
}

func TestBranchSameScope(t *testing.T) {
	f := mustFork(t, Root(), "")
	b := f.Branch(0)
	mustOp(t, b, "")
	if f.Branch(0) != b {
		t.Fatal("Branch(0) twice returned different scopes")
	}
	eq(t, "second op", mustOp(t, f.Branch(0), ""), "1.0.2")
	defer func() {
		if recover() == nil {
			t.Error("Branch(-1) did not panic")
		}
	}()
	f.Branch(-1)
}

func TestValidateName(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		scope, name, rule string
	}{
		{"", "", RuleEmpty},
		{"t2", "", RuleEmpty},
		{"", "a.b", RuleDot},
		{"", ".", RuleDot},
		{"", "a.", RuleDot},
		{"", "a b", RuleSpace},
		{"", " a", RuleSpace},
		{"", "a\tb", RuleSpace},
		{"", "a\nb", RuleSpace},
		{"", "a\u00a0b", RuleSpace}, // no-break space
		{"", "\u2003", RuleSpace},   // em space
		{"", "a\x00b", RuleText},    // NUL
		{"", "a\xffb", RuleText},    // not UTF-8
		{"", "\x1b[2J", RuleText},   // an escape sequence
		{"", "a.b c", RuleDot},      // first rule wins
		{"", "0", RuleNumeric},
		{"", "123", RuleNumeric},
		{"", "007", RuleNumeric},
		{"", "t0", RuleTaskSegment},
		{"", "t2", RuleTaskSegment},
		{"", "t123", RuleTaskSegment},
		{"", "t02", RuleTaskSegment},
		{"", long(300), ""},
		{"", long(301), RuleTooLong},
		{"t2", long(297), ""}, // "t2." + 297 = 300
		{"t2", long(298), RuleTooLong},
		{"", strings.Repeat("é", 300), ""}, // characters, not bytes
		{"", strings.Repeat("é", 301), RuleTooLong},
		{long(299), "b", RuleTooLong},
		{long(298), "b", ""},
		{"", "t", ""},
		{"", "t2x", ""},
		{"", "T2", ""},
		{"", "tt2", ""},
		{"", "12a", ""},
		{"", "a12", ""},
		{"", "-1", ""},
		{"", "٣", ""}, // not an ASCII digit
		{"", "iter-3", ""},
		{"", "create-vm", ""},
		{"fanout.0", "attach-ip", ""},
	}
	for _, tt := range tests {
		err := ValidateName(tt.scope, tt.name)
		if tt.rule == "" {
			if err != nil {
				t.Errorf("ValidateName(%.20q, %.20q) = %v, want nil", tt.scope, tt.name, err)
			}
			continue
		}
		var e *StepIDError
		if !errors.As(err, &e) {
			t.Errorf("ValidateName(%.20q, %.20q) = %v, want rule %s", tt.scope, tt.name, err, tt.rule)
			continue
		}
		if e.Rule != tt.rule || e.Scope != tt.scope || e.Name != tt.name {
			t.Errorf("ValidateName(%.20q, %.20q) = %+v, want rule %s", tt.scope, tt.name, *e, tt.rule)
		}
	}
}

// TestOpRules checks that Op, Spawn and Fork enforce the rules (including
// uniqueness across kinds) and that a rejected op consumes nothing.
func TestOpRules(t *testing.T) {
	type call struct {
		kind, name string // kind: "op", "spawn", "fork"
	}
	do := func(s *Scope, c call) (string, error) {
		switch c.kind {
		case "spawn":
			sc, err := s.Spawn(c.name)
			if err != nil {
				return "", err
			}
			return sc.Key(), nil
		case "fork":
			f, err := s.Fork(c.name)
			if err != nil {
				return "", err
			}
			return f.Key(), nil
		}
		return s.Op(c.name)
	}
	tests := []struct {
		name  string
		scope func(t *testing.T) *Scope
		setup []call
		try   call
		rule  string
		key   string // wanted key when rule == ""
	}{
		{name: "step/step", setup: []call{{"op", "x"}}, try: call{"op", "x"}, rule: RuleDuplicate},
		{name: "step/fork", setup: []call{{"op", "fanout"}}, try: call{"fork", "fanout"}, rule: RuleDuplicate},
		{name: "fork/step", setup: []call{{"fork", "fanout"}}, try: call{"op", "fanout"}, rule: RuleDuplicate},
		{name: "spawn/step", setup: []call{{"spawn", "w"}}, try: call{"op", "w"}, rule: RuleDuplicate},
		{name: "step/spawn", setup: []call{{"op", "w"}}, try: call{"spawn", "w"}, rule: RuleDuplicate},
		{name: "fork/spawn", setup: []call{{"fork", "w"}}, try: call{"spawn", "w"}, rule: RuleDuplicate},
		{name: "other name", setup: []call{{"op", "x"}, {"op", ""}}, try: call{"op", "y"}, key: "y"},
		{name: "dot", try: call{"op", "a.b"}, rule: RuleDot},
		{name: "fork dot", try: call{"fork", "a.b"}, rule: RuleDot},
		{name: "spawn numeric", try: call{"spawn", "2"}, rule: RuleNumeric},
		{name: "spawn task", try: call{"spawn", "t1"}, rule: RuleTaskSegment},
		{name: "fork space", try: call{"fork", "a b"}, rule: RuleSpace},
		{name: "op 300", try: call{"op", strings.Repeat("a", 300)}, key: strings.Repeat("a", 300)},
		{name: "op 301", try: call{"op", strings.Repeat("a", 301)}, rule: RuleTooLong},
		{name: "fork 300", try: call{"fork", strings.Repeat("a", 300)}, key: strings.Repeat("a", 300)},
		{name: "fork 301", try: call{"fork", strings.Repeat("a", 301)}, rule: RuleTooLong},
		{name: "spawn 301", try: call{"spawn", strings.Repeat("a", 301)}, rule: RuleTooLong},
		{
			name:  "nested 300",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), "") }, // t1
			try:   call{"op", strings.Repeat("a", 297)},
			key:   "t1." + strings.Repeat("a", 297),
		},
		{
			name:  "nested 301",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), "") },
			try:   call{"op", strings.Repeat("a", 298)},
			rule:  RuleTooLong,
		},
		{
			name:  "unnamed 300",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), strings.Repeat("s", 298)) },
			setup: []call{{"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}},
			try:   call{"op", ""},
			key:   strings.Repeat("s", 298) + ".9",
		},
		{
			name:  "unnamed 301",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), strings.Repeat("s", 298)) },
			setup: []call{{"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}, {"op", ""}},
			try:   call{"op", ""}, // position 10
			rule:  RuleTooLong,
		},
		{
			name:  "unnamed fork 301",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), strings.Repeat("s", 299)) },
			try:   call{"fork", ""},
			rule:  RuleTooLong,
		},
		{
			name:  "unnamed spawn 300",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), strings.Repeat("s", 297)) },
			try:   call{"spawn", ""},
			key:   strings.Repeat("s", 297) + ".t1",
		},
		{
			name:  "unnamed spawn 301",
			scope: func(t *testing.T) *Scope { return mustSpawn(t, Root(), strings.Repeat("s", 298)) },
			try:   call{"spawn", ""},
			rule:  RuleTooLong,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Root()
			if tt.scope != nil {
				s = tt.scope(t)
			}
			for _, c := range tt.setup {
				if _, err := do(s, c); err != nil {
					t.Fatalf("setup %v: %v", c, err)
				}
			}
			before := s.Position()
			key, err := do(s, tt.try)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("%v: %v", tt.try, err)
				}
				eq(t, "key", key, tt.key)
				if s.Position() != before+1 {
					t.Errorf("Position = %d, want %d", s.Position(), before+1)
				}
				return
			}
			var e *StepIDError
			if !errors.As(err, &e) {
				t.Fatalf("%v = %q, %v; want rule %s", tt.try, key, err, tt.rule)
			}
			if e.Rule != tt.rule || e.Scope != s.Key() || e.Name != tt.try.name {
				t.Errorf("error = %+v, want rule %s scope %q name %q", *e, tt.rule, s.Key(), tt.try.name)
			}
			if s.Position() != before {
				t.Errorf("rejected op consumed a position: %d -> %d", before, s.Position())
			}
			// The next op takes the position the rejected one did not.
			if tt.rule != RuleTooLong {
				eq(t, "next op", mustOp(t, s, ""), join(s.Key(), itoa(before+1)))
			}
		})
	}
}

func TestSameNameDifferentScopes(t *testing.T) {
	r := Root()
	eq(t, "root x", mustOp(t, r, "x"), "x")
	f := mustFork(t, r, "fanout")
	eq(t, "branch 0", mustOp(t, f.Branch(0), "x"), "fanout.0.x")
	eq(t, "branch 1", mustOp(t, f.Branch(1), "x"), "fanout.1.x")
	w := mustSpawn(t, r, "w")
	eq(t, "task", mustOp(t, w, "x"), "w.x")
	eq(t, "task fanout", mustFork(t, w, "fanout").Key(), "w.fanout")
}

// TestRejectedNameStaysFree checks that a name rejected for another reason
// is not recorded, and that after a rejection the name can still be used.
func TestRejectedNameStaysFree(t *testing.T) {
	s := mustSpawn(t, Root(), strings.Repeat("s", 290))
	if _, err := s.Op(strings.Repeat("n", 10)); err == nil {
		t.Fatal("want too-long")
	}
	mustOp(t, s, strings.Repeat("n", 9))
	if _, err := s.Op(strings.Repeat("n", 9)); err == nil {
		t.Fatal("want duplicate")
	}
	if s.Position() != 1 {
		t.Errorf("Position = %d, want 1", s.Position())
	}
}

func TestStepIDErrorMessage(t *testing.T) {
	tests := []struct {
		err  StepIDError
		want string
	}{
		{StepIDError{"t2", "a.b", RuleDot}, `step id "a.b" in scope t2: a name must not contain "." (dots separate scopes)`},
		{StepIDError{"", "x", RuleDuplicate}, `step id "x" in scope root: the name is already used in this scope (step, task and fork names share a scope)`},
		{StepIDError{"", "t2", RuleTaskSegment}, `step id "t2" in scope root: a name must not be "t" followed by digits (reserved for spawned tasks)`},
		{StepIDError{"2.0", "", RuleTooLong}, `unnamed op in scope 2.0: its key would be longer than 300 characters (nesting too deep)`},
	}
	for _, tt := range tests {
		eq(t, "Error()", tt.err.Error(), tt.want)
	}
	for _, r := range []string{RuleEmpty, RuleText, RuleDot, RuleSpace, RuleNumeric, RuleTaskSegment, RuleTooLong, RuleDuplicate} {
		msg := (&StepIDError{Scope: "s", Name: "n", Rule: r}).Error()
		if strings.Contains(msg, "rule "+r) {
			t.Errorf("rule %s has no words: %s", r, msg)
		}
	}
}

func TestParse(t *testing.T) {
	good := []struct {
		key   string
		scope []string
		last  string
	}{
		{"1", nil, "1"},
		{"create-vm", nil, "create-vm"},
		{"t2.1", []string{"t2"}, "1"},
		{"fanout.0.attach-ip", []string{"fanout", "0"}, "attach-ip"},
		{"t4.2.3.t1", []string{"t4", "2", "3"}, "t1"},
	}
	for _, tt := range good {
		k, err := Parse(tt.key)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.key, err)
			continue
		}
		if strings.Join(k.Scope, "|") != strings.Join(tt.scope, "|") || len(k.Scope) != len(tt.scope) || k.Last != tt.last {
			t.Errorf("Parse(%q) = %#v", tt.key, k)
		}
		eq(t, "String", k.String(), tt.key)
		eq(t, "ScopeKey", k.ScopeKey(), strings.Join(tt.scope, "."))
	}
	for _, bad := range []string{"", ".", "a.", ".a", "a..b", "a b", "a.\tb", "\u2003"} {
		if k, err := Parse(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %#v, %v; want ErrMalformed", bad, k, err)
		}
	}
	// String must not write through a shared backing array.
	k, _ := Parse("a.b.c")
	_ = k.String()
	k2 := Key{Scope: k.Scope[:1], Last: "z"}
	eq(t, "String", k2.String(), "a.z")
	eq(t, "String", k.String(), "a.b.c")
	eq(t, "zero Key", Key{}.String(), "")
}

func TestFullID(t *testing.T) {
	eq(t, "FullID", FullID("run1", "t2.1"), "run1.t2.1")
	for _, tt := range []struct{ id, run, key string }{
		{"run1.1", "run1", "1"},
		{"run1.t2.1", "run1", "t2.1"},
		{"01J.fanout.0.attach-ip", "01J", "fanout.0.attach-ip"},
	} {
		run, key, err := SplitFullID(tt.id)
		if err != nil || run != tt.run || key != tt.key {
			t.Errorf("SplitFullID(%q) = %q, %q, %v", tt.id, run, key, err)
		}
		eq(t, "round trip", FullID(run, key), tt.id)
	}
	for _, bad := range []string{"", "run", ".1", "run.", "run..1", "run.1.", "run.a b"} {
		if run, key, err := SplitFullID(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("SplitFullID(%q) = %q, %q, %v; want ErrMalformed", bad, run, key, err)
		}
	}
}

// Next consumes a position exactly when it is given the key Op("") would
// mint there, and then the scope goes on as if Op had minted it.
func TestNextTakesOnlyTheNextKey(t *testing.T) {
	for _, scope := range []*Scope{Root(), mustSpawn(t, Root(), ""), mustFork(t, Root(), "").Branch(0)} {
		viaOp, viaNext := clone(scope), clone(scope)
		for i := 0; i < 12; i++ {
			want, err := viaOp.Op("")
			if err != nil {
				t.Fatal(err)
			}
			for _, wrong := range []string{want + "0", "x." + want, want[:len(want)-1], "9" + want, viaNext.Key() + "1" + want[len(want)-1:]} {
				if wrong != want && viaNext.Next(wrong) {
					t.Fatalf("scope %q, position %d: Next(%q) took the position of %q", scope.Key(), i+1, wrong, want)
				}
			}
			if !viaNext.Next(want) {
				t.Fatalf("scope %q: Next(%q) refused the next key", scope.Key(), want)
			}
		}
		a, _ := viaOp.Op("")
		b, _ := viaNext.Op("")
		if a != b || viaOp.Position() != viaNext.Position() {
			t.Fatalf("scope %q: after Next, Op mints %q at %d; after Op, %q at %d", scope.Key(), b, viaNext.Position(), a, viaOp.Position())
		}
	}
}

func clone(s *Scope) *Scope { c := *s; return &c }
