// Package lineage mints durable operation ids ("keys") from task lineage.
//
// A key is a dotpath relative to the run. Within a scope (the root of a run,
// a spawned task, or one parallel branch) every op takes the next position
// 1, 2, 3, … in program order, so a key is a pure function of the task tree
// and of program order inside each task, never of how the scheduler
// interleaved tasks:
//
//	op                      unnamed key    named key ("x")
//	step/call/sleep/...     {scope}.{p}    {scope}.x
//	spawned task            {scope}.t{p}   {scope}.x      (the task's scope)
//	parallel fork, branch i {scope}.{p}.{i} {scope}.x.{i} (the branch's scope)
//
// The root scope's key is "", so root ops are "1", "2", …. A named op still
// consumes a position, so naming or unnaming one op shifts no other key.
package lineage

import "strconv"

// Scope is one id scope: the root of a run, a spawned task, or one parallel
// branch. It holds the next position and the names used so far.
// Not safe for concurrent use (the host's scheduler is single-threaded).
type Scope struct {
	key   string
	pos   int
	names map[string]struct{}
}

// Root returns a new root scope; its key is "".
func Root() *Scope { return &Scope{} }

// Key returns the scope's key: "" for the root, e.g. "t2", "2.0",
// "fanout.1", "t2.t1" otherwise.
func (s *Scope) Key() string { return s.key }

// Position returns the number of positions consumed so far in s.
func (s *Scope) Position() int { return s.pos }

// Op reserves the next position for a step-like op (step, call, sleep,
// promise, child) and returns its key: "{scope}.{p}", or "{scope}.{name}"
// for a named op (at root: "{p}" / "{name}"). name "" means unnamed.
//
// On a validation error nothing is consumed and a *StepIDError is returned.
// It costs one string allocation for the key.
func (s *Scope) Op(name string) (string, error) {
	return s.reserve(name, itoa)
}

// Next reserves the next position for an unnamed step-like op whose key
// the caller already holds (one minted by Op in an earlier execution),
// without minting it again: if key is the key Op("") would return, the
// position is consumed and Next returns true; otherwise nothing changes.
func (s *Scope) Next(key string) bool {
	if !s.KeyAt(key, s.pos+1) || keyLen(key) > MaxKeyLen {
		return false
	}
	s.pos++
	return true
}

// KeyAt reports whether key is the key of the unnamed step-like op at
// position p of s: "{scope}.{p}", or "{p}" at the root. It allocates
// nothing.
func (s *Scope) KeyAt(key string, p int) bool {
	var b [20]byte
	d := strconv.AppendInt(b[:0], int64(p), 10)
	prefix := len(key) - len(d)
	switch {
	case prefix < 0 || key[prefix:] != string(d):
		return false
	case s.key == "":
		return prefix == 0
	}
	return prefix == len(s.key)+1 && key[len(s.key)] == '.' && key[:len(s.key)] == s.key
}

// Spawn reserves the next position for a spawned task (skein.Go) and
// returns the task's new scope, whose key is "{scope}.t{p}", or
// "{scope}.{name}" for a named spawn. Errors are as for Op.
func (s *Scope) Spawn(name string) (*Scope, error) {
	key, err := s.reserve(name, func(p int) string { return "t" + itoa(p) })
	if err != nil {
		return nil, err
	}
	return &Scope{key: key}, nil
}

// Fork reserves the next position for a parallel fork and returns it.
// The fork's key is "{scope}.{p}", or "{scope}.{name}" for a named fork;
// branch i has scope "{fork}.{i}". Errors are as for Op.
func (s *Scope) Fork(name string) (*Fork, error) {
	key, err := s.reserve(name, itoa)
	if err != nil {
		return nil, err
	}
	return &Fork{key: key}, nil
}

// reserve validates name (or, if unnamed, the positional key that
// unnamed(p) gives) and only then consumes the position and the name.
func (s *Scope) reserve(name string, unnamed func(p int) string) (string, error) {
	p := s.pos + 1
	var key string
	if name == "" {
		key = join(s.key, unnamed(p))
		if keyLen(key) > MaxKeyLen {
			return "", &StepIDError{Scope: s.key, Rule: RuleTooLong}
		}
	} else {
		if err := ValidateName(s.key, name); err != nil {
			return "", err
		}
		if _, dup := s.names[name]; dup {
			return "", &StepIDError{Scope: s.key, Name: name, Rule: RuleDuplicate}
		}
		if s.names == nil {
			s.names = make(map[string]struct{})
		}
		s.names[name] = struct{}{}
		key = join(s.key, name)
	}
	s.pos = p
	return key, nil
}

// Fork is one parallel fork; it hands out the scopes of its branches.
// Not safe for concurrent use.
type Fork struct {
	key      string
	branches map[int]*Scope
}

// Key returns the fork's key: "{scope}.{p}" or "{scope}.{name}".
func (f *Fork) Key() string { return f.key }

// Branch returns the scope of branch i, keyed "{fork}.{i}". Calls with the
// same i return the same *Scope, so asking twice never re-mints a key.
// It panics if i < 0.
func (f *Fork) Branch(i int) *Scope {
	if i < 0 {
		panic("lineage: negative branch index " + itoa(i))
	}
	if b, ok := f.branches[i]; ok {
		return b
	}
	if f.branches == nil {
		f.branches = make(map[int]*Scope)
	}
	b := &Scope{key: f.key + "." + itoa(i)}
	f.branches[i] = b
	return b
}

func join(scope, last string) string {
	if scope == "" {
		return last
	}
	return scope + "." + last
}
