package runfilter

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Limits of a filter, so that one request stays a bounded query.
const (
	MaxLen    = 64 << 10 // bytes of filter text
	MaxTerms  = 64       // terms joined by and
	MaxValues = 1000     // values of one in (...)
)

// Error is a filter that does not parse: the byte offset of the term at
// fault (0-based), the term, and the rule it breaks.
type Error struct {
	Pos  int
	Term string
	Rule string
}

func (e *Error) Error() string {
	return fmt.Sprintf("filter: at offset %d (%q): %s", e.Pos, e.Term, e.Rule)
}

// Parse reads a filter into a store.RunFilter (its conditions only: no
// order, limit or cursor). now resolves relative times ("-2h" is
// now-2h). A module term's value is left in Module as written, a name or
// a hash: the caller resolves names (Resolve). The empty filter selects
// every run.
func Parse(s string, now time.Time) (store.RunFilter, error) {
	var f store.RunFilter
	if len(s) > MaxLen {
		return f, &Error{Pos: MaxLen, Term: clip(s[MaxLen:]), Rule: fmt.Sprintf("a filter is at most %d bytes", MaxLen)}
	}
	ts, err := lex(s)
	if err != nil {
		return f, err
	}
	p := &parser{ts: ts, src: s, now: now, seen: map[string]bool{}}
	if p.peek().kind == tokEOF {
		return f, nil
	}
	for n := 1; ; n++ {
		if n > MaxTerms {
			return f, p.fail(p.peek(), fmt.Sprintf("a filter has at most %d terms", MaxTerms))
		}
		if err := p.term(&f); err != nil {
			return f, err
		}
		t := p.next()
		if t.kind == tokEOF {
			return f, nil
		}
		if t.kind != tokWord || !strings.EqualFold(t.text, "and") {
			rule := "terms are joined by and"
			if strings.EqualFold(t.text, "or") {
				rule = "terms are joined by and; there is no or (use in (a, b) for one of several statuses or ids)"
			}
			return f, p.fail(t, rule)
		}
	}
}

var andRe = regexp.MustCompile(`(?i)\s+and\s`)

type parser struct {
	ts   []token
	i    int
	src  string
	now  time.Time
	seen map[string]bool // the fields (and bounds) given so far
}

func (p *parser) peek() token { return p.ts[p.i] }

func (p *parser) next() token {
	t := p.ts[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// fail is an *Error at t: the term is the source from t to the next
// and (or the end).
func (p *parser) fail(t token, rule string) error {
	rest := p.src[t.pos:]
	if m := andRe.FindStringIndex(rest); m != nil {
		rest = rest[:m[0]]
	}
	if t.kind == tokEOF {
		rest = "end of filter"
	}
	return &Error{Pos: t.pos, Term: clip(rest), Rule: rule}
}

// term reads FIELD OP VALUE or FIELD in (VALUE, ...) into f.
func (p *parser) term(f *store.RunFilter) error {
	ft := p.next()
	if ft.kind != tokWord {
		return p.fail(ft, "a term starts with a field: "+fieldList)
	}
	field := strings.ToLower(ft.text)
	if strings.HasPrefix(field, "attr.") {
		return p.attrTerm(f, ft)
	}
	fd, ok := fields[field]
	if !ok {
		return p.fail(ft, fmt.Sprintf("unknown field %q: want %s", ft.text, fieldList))
	}
	op := p.next()
	if op.kind == tokWord && strings.EqualFold(op.text, "in") {
		if !fd.in {
			return p.fail(ft, field+" takes no in (...): only status and id do")
		}
		vals, err := p.list()
		if err != nil {
			return err
		}
		return p.once(ft, field, func() error { return fd.set(p, f, ft, "=", vals) })
	}
	if op.kind != tokOp || !strings.Contains(fd.ops, " "+op.text+" ") {
		return p.fail(ft, fmt.Sprintf("%s compares with%s", field, fd.ops))
	}
	v := p.next()
	if v.kind != tokWord && v.kind != tokString {
		return p.fail(v, fmt.Sprintf("%s %s wants a value", field, op.text))
	}
	key := field
	if fd.ranged {
		key += map[bool]string{true: ">", false: "<"}[op.text[0] == '>']
	}
	return p.once(ft, key, func() error { return fd.set(p, f, ft, op.text, []token{v}) })
}

// once runs set unless key was given before: each field (each bound of
// a range) at most once, so that no term silently replaces another.
func (p *parser) once(ft token, key string, set func() error) error {
	if p.seen[key] {
		return p.fail(ft, "each field is given at most once (a range: one lower and one upper bound)")
	}
	p.seen[key] = true
	return set()
}

// list reads ( VALUE, ... ).
func (p *parser) list() ([]token, error) {
	if t := p.next(); t.kind != tokLParen {
		return nil, p.fail(t, "in wants a list: in (a, b, ...)")
	}
	var vals []token
	for {
		v := p.next()
		if v.kind != tokWord && v.kind != tokString {
			return nil, p.fail(v, "in (...) wants values separated by commas")
		}
		if vals = append(vals, v); len(vals) > MaxValues {
			return nil, p.fail(v, fmt.Sprintf("in (...) holds at most %d values", MaxValues))
		}
		switch t := p.next(); t.kind {
		case tokComma:
		case tokRParen:
			return vals, nil
		default:
			return nil, p.fail(t, "in (...) wants values separated by commas, closed by )")
		}
	}
}
