package store

import "testing"

func TestQualified(t *testing.T) {
	for _, c := range []struct{ q, ns, local string }{
		{"r1", "default", "r1"},
		{"acme/r1", "acme", "r1"},
		{"acme/r1.1.2", "acme", "r1.1.2"},
		{"r1.fetch/users", "default", "r1.fetch/users"}, // a '/' in an op's key
		{"acme/r1.fetch/users", "acme", "r1.fetch/users"},
		{"acme/", "acme", ""},
		{"", "default", ""},
	} {
		ns, local := SplitQualified(c.q)
		if ns != c.ns || local != c.local {
			t.Errorf("SplitQualified(%q) = %q, %q; want %q, %q", c.q, ns, local, c.ns, c.local)
		}
		if c.local != "" && Qualify(ns, local) != c.q {
			t.Errorf("Qualify(%q, %q) = %q; want %q back", ns, local, Qualify(ns, local), c.q)
		}
	}
	for _, bad := range []string{"", "1a", "a.b", "a/b", "a b"} {
		if CheckNamespaceName(bad) == nil {
			t.Errorf("CheckNamespaceName(%q) = nil; want a refusal", bad)
		}
	}
	if err := CheckNamespaceName("team-a_1"); err != nil {
		t.Error(err)
	}
}
