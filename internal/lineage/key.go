package lineage

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ErrMalformed is wrapped by the errors of Parse and SplitFullID.
var ErrMalformed = errors.New("lineage: malformed id")

// FullID returns the durable id "{run}.{key}" of the op with key key
// (non-empty) in run run (which must not contain ".").
func FullID(run, key string) string { return run + "." + key }

// SplitFullID splits a full id at its first "." into run and key. Run ids
// must not contain ".", so the split is unambiguous. It fails, wrapping
// ErrMalformed, if the run is empty or the key does not Parse.
func SplitFullID(id string) (run, key string, err error) {
	run, key, ok := strings.Cut(id, ".")
	if !ok || run == "" {
		return "", "", fmt.Errorf("%w: %q is not {run}.{key}", ErrMalformed, id)
	}
	if _, err := Parse(key); err != nil {
		return "", "", fmt.Errorf("id %q: %w", id, err)
	}
	return run, key, nil
}

// Key is a parsed key: the segments of its scope path and its final
// segment. The zero Key formats as "".
type Key struct {
	Scope []string // scope path segments, outermost first; nil at root
	Last  string   // the op's own segment
}

// Parse splits key into its segments. It fails, wrapping ErrMalformed, for
// "", an empty segment, or whitespace. It checks syntax only: it does not
// enforce MaxKeyLen or the name rules.
func Parse(key string) (Key, error) {
	if key == "" {
		return Key{}, fmt.Errorf("%w: empty key", ErrMalformed)
	}
	if strings.IndexFunc(key, unicode.IsSpace) >= 0 {
		return Key{}, fmt.Errorf("%w: key %q contains whitespace", ErrMalformed, key)
	}
	segs := strings.Split(key, ".")
	for _, s := range segs {
		if s == "" {
			return Key{}, fmt.Errorf("%w: key %q has an empty segment", ErrMalformed, key)
		}
	}
	k := Key{Last: segs[len(segs)-1]}
	if len(segs) > 1 {
		k.Scope = segs[: len(segs)-1 : len(segs)-1]
	}
	return k, nil
}

// String formats k: its segments joined by ".".
func (k Key) String() string { return join(k.ScopeKey(), k.Last) }

// ScopeKey returns the key of the scope k was minted in ("" at root).
func (k Key) ScopeKey() string { return strings.Join(k.Scope, ".") }
