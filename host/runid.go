package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/skeinrun/skein/store"
)

// MaxRunIDLen is the longest run id, given or minted.
const MaxRunIDLen = 128

// runIDChars are the characters of a run id a caller gives: letters,
// digits and - _ : @. Ids travel in URL paths, in log lines and on
// operators' terminals, so nothing that needs escaping in any of them is
// allowed. Minted ids (child runs) add '.' and '~' (see ChildRunID).
func runIDChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_:@", c) >= 0
}

// ReservedRunIDPrefixes start the ids of the runs that schedules
// ("sched:{name}@{slot}") and webhooks ("hook:{name}:{key}") start: a
// client's Start of such an id is refused, so that no client can take a
// schedule's slot or a delivery's run before it happens.
var ReservedRunIDPrefixes = []string{"sched:", "hook:"}

// validRunID checks a run id given to Start, qualified by its namespace
// (store/namespace.go); reserved allows the ReservedRunIDPrefixes (a
// schedule's own start).
func validRunID(q string, reserved bool) error {
	ns, id := store.SplitQualified(q)
	if err := store.CheckNamespaceName(ns); err != nil {
		return fmt.Errorf("run id %q: %w", q, err)
	}
	if id == "" {
		return fmt.Errorf("run id is empty")
	}
	if len(id) > MaxRunIDLen {
		return fmt.Errorf("run id %.20q… is longer than %d characters", id, MaxRunIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !runIDChar(id[i]) {
			return fmt.Errorf("run id %q has %q at byte %d: a run id is made of letters, digits and - _ : @ (a full op id is {run}.{key})", id, id[i:i+1], i)
		}
	}
	for _, p := range ReservedRunIDPrefixes {
		if strings.HasPrefix(id, p) && !reserved {
			return fmt.Errorf("run id %q starts with %q: ids that start with sched: or hook: are reserved for the runs schedules and webhooks start", id, p)
		}
	}
	return nil
}

// ChildRunID returns the id of the child run that the op at key of run
// parent starts: {root}.{path}, where root is the id of the run at the
// top of the tree and path the keys below it ({parent's path}.{key}), as
// long as that fits in MaxRunIDLen and path holds only run id characters
// and dots. Otherwise {root}.~{hash}, with 96 bits of the sha256 of the
// path (root cut to fit), so that deep trees and exotic step names still
// give ids within the rule. Either form is a pure function of the tree.
// A child is in its parent's namespace: the rule applies to the local
// part of the id (store/namespace.go).
func ChildRunID(parent, key string) string {
	ns, local := store.SplitQualified(parent)
	return store.Qualify(ns, childLocalID(local, key))
}

// childLocalID is ChildRunID within one namespace.
func childLocalID(parent, key string) string {
	root, rel, _ := strings.Cut(parent, ".")
	path := key
	if rel != "" {
		path = rel + "." + key
	}
	if id := root + "." + path; len(id) <= MaxRunIDLen && plainPath(path) {
		return id
	}
	sum := sha256.Sum256([]byte(path))
	const tail = 2 + 24 // ".~" and 12 bytes in hex
	return root[:min(len(root), MaxRunIDLen-tail)] + ".~" + hex.EncodeToString(sum[:12])
}

// plainPath reports whether path is made of run id characters and dots.
func plainPath(path string) bool {
	for i := 0; i < len(path); i++ {
		if !runIDChar(path[i]) && path[i] != '.' {
			return false
		}
	}
	return true
}

// childKey returns the key of the op in run parent that started child
// run id: read off a plain id; for a hashed one, noted when this process
// started the child, else found in the parent's journal.
func (h *Host) childKey(ctx context.Context, parent, id string) (string, error) {
	if key, ok := plainChildKey(parent, id); ok {
		return key, nil
	}
	h.mu.Lock()
	key, ok := h.childKeys[id]
	h.mu.Unlock()
	if ok {
		return key, nil
	}
	outs, err := h.cfg.Store.Outcomes(ctx, parent)
	if err != nil {
		return "", fmt.Errorf("child run %s: %w", id, err)
	}
	for _, o := range outs {
		if o.Kind == "child" && ChildRunID(parent, o.Key) == id {
			return o.Key, nil
		}
	}
	return "", fmt.Errorf("child run %s: no child op of run %s starts it: %w", id, parent, store.ErrNotFound)
}

// plainChildKey reads the op key off a child run id that is not hashed.
func plainChildKey(parent, id string) (string, bool) {
	key, ok := strings.CutPrefix(id, parent+".")
	return key, ok && !strings.Contains(id, "~")
}

// noteChildKey keeps the op key of a child run this process starts, if
// its id is hashed: the parent commits the op at its next idle point,
// and the child may end before that.
func (h *Host) noteChildKey(parent, id, key string) {
	if _, ok := plainChildKey(parent, id); ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.childKeys == nil {
		h.childKeys = map[string]string{}
	}
	h.childKeys[id] = key
}

// forgetChildKey drops what noteChildKey kept, once the child's end is
// committed.
func (h *Host) forgetChildKey(id string) {
	h.mu.Lock()
	delete(h.childKeys, id)
	h.mu.Unlock()
}
