package lineage

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A node is one op in a random program: an op, a spawn (its children run in
// the task's scope), a fork (its children are branches), or a branch (its
// children run in the branch's scope; branches cannot be named).
type node struct {
	kind     int
	id       int
	parent   *node
	children []*node
}

const (
	kindOp = iota
	kindSpawn
	kindFork
	kindBranch
)

// genTree returns the ops of one scope, nesting at most depth levels.
func genTree(r *rand.Rand, depth int, parent *node, next *int) []*node {
	n := r.IntN(5)
	ops := make([]*node, n)
	for i := range ops {
		*next++
		nd := &node{kind: kindOp, id: *next, parent: parent}
		if depth > 0 {
			nd.kind = r.IntN(3)
		}
		switch nd.kind {
		case kindSpawn:
			nd.children = genTree(r, depth-1, nd, next)
		case kindFork:
			for range 1 + r.IntN(3) {
				*next++
				b := &node{kind: kindBranch, id: *next, parent: nd}
				b.children = genTree(r, depth-1, b, next)
				nd.children = append(nd.children, b)
			}
		}
		ops[i] = nd
	}
	return ops
}

// cursor is a scope with the ops it still has to run, in program order.
type cursor struct {
	s   *Scope
	ops []*node
}

// runTree runs the program in a random interleaving of its scopes (program
// order within each scope, any order across scopes, as a scheduler would)
// and returns each node's key. names gives the names of named nodes.
func runTree(t *testing.T, r *rand.Rand, ops []*node, names map[int]string) map[int]string {
	t.Helper()
	keys := map[int]string{}
	var live []*cursor
	if len(ops) > 0 {
		live = append(live, &cursor{Root(), ops})
	}
	for len(live) > 0 {
		i := r.IntN(len(live))
		c := live[i]
		nd := c.ops[0]
		if c.ops = c.ops[1:]; len(c.ops) == 0 {
			live = append(live[:i], live[i+1:]...)
		}
		name := names[nd.id]
		var err error
		switch nd.kind {
		case kindOp:
			keys[nd.id], err = c.s.Op(name)
		case kindSpawn:
			var s *Scope
			if s, err = c.s.Spawn(name); err == nil {
				keys[nd.id] = s.Key()
				if len(nd.children) > 0 {
					live = append(live, &cursor{s, nd.children})
				}
			}
		case kindFork:
			var f *Fork
			if f, err = c.s.Fork(name); err == nil {
				keys[nd.id] = f.Key()
				for j, b := range nd.children {
					bs := f.Branch(j)
					keys[b.id] = bs.Key()
					if len(b.children) > 0 {
						live = append(live, &cursor{bs, b.children})
					}
				}
			}
		}
		if err != nil {
			t.Fatalf("node %d: %v", nd.id, err)
		}
	}
	return keys
}

// randomNames names a random subset of the nameable nodes, "n{id}" or
// "r{id}" (unique, so never a duplicate).
func randomNames(r *rand.Rand, ops []*node) map[int]string {
	names := map[int]string{}
	var walk func([]*node)
	walk = func(ns []*node) {
		for _, nd := range ns {
			if nd.kind != kindBranch {
				switch r.IntN(3) {
				case 1:
					names[nd.id] = fmt.Sprintf("n%d", nd.id)
				case 2:
					names[nd.id] = fmt.Sprintf("r%d", nd.id)
				}
			}
			walk(nd.children)
		}
	}
	walk(ops)
	return names
}

func allNodes(ops []*node) []*node {
	var out []*node
	for _, nd := range ops {
		out = append(out, nd)
		out = append(out, allNodes(nd.children)...)
	}
	return out
}

func scopeKeyOf(nd *node, keys map[int]string) string {
	if nd.parent == nil {
		return ""
	}
	return keys[nd.parent.id]
}

// TestPropertyNaming: naming, unnaming or renaming any subset of ops
// changes the keys of exactly those ops and of everything inside their
// scopes (a named spawn or fork renames its subtree), and no other key.
// Keys also do not depend on how the scopes' ops were interleaved.
func TestPropertyNaming(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 400 {
		var next int
		ops := genTree(r, 4, nil, &next)
		a, b := randomNames(r, ops), randomNames(r, ops)
		ka := runTree(t, r, ops, a)
		if again := runTree(t, r, ops, a); fmt.Sprint(again) != fmt.Sprint(ka) {
			t.Fatalf("trial %d: keys depend on interleaving:\n%v\n%v", trial, ka, again)
		}
		kb := runTree(t, r, ops, b)
		var changed func(*node) bool
		changed = func(nd *node) bool {
			return nd != nil && (a[nd.id] != b[nd.id] || changed(nd.parent))
		}
		for _, nd := range allNodes(ops) {
			if want := changed(nd); (ka[nd.id] != kb[nd.id]) != want {
				t.Fatalf("trial %d node %d (kind %d): key %q -> %q, want changed=%v",
					trial, nd.id, nd.kind, ka[nd.id], kb[nd.id], want)
			}
		}
	}
}

// TestPropertyUnique: in random programs no two ops (nor branch scopes)
// share a key, every key parses back to itself, and its ScopeKey is the
// scope it was minted in.
func TestPropertyUnique(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 400 {
		var next int
		ops := genTree(r, 5, nil, &next)
		keys := runTree(t, r, ops, randomNames(r, ops))
		seen := map[string]int{}
		for _, nd := range allNodes(ops) {
			k := keys[nd.id]
			if other, dup := seen[k]; dup {
				t.Fatalf("trial %d: nodes %d and %d both have key %q", trial, other, nd.id, k)
			}
			seen[k] = nd.id
			p, err := Parse(k)
			if err != nil || p.String() != k {
				t.Fatalf("trial %d: Parse(%q) = %#v, %v", trial, k, p, err)
			}
			if got, want := p.ScopeKey(), scopeKeyOf(nd, keys); got != want {
				t.Fatalf("trial %d: ScopeKey(%q) = %q, want %q", trial, k, got, want)
			}
		}
	}
}

// TestRandomPrograms runs the FuzzKeys checker over random byte programs.
func TestRandomPrograms(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		prog := make([]byte, r.IntN(400))
		for i := range prog {
			prog[i] = byte(r.Uint32())
		}
		checkProgram(t, prog)
	}
}
