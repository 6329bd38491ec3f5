package lines

import (
	"slices"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	var got []string
	w := New(func(l string) { got = append(got, l) })
	for _, s := range []string{"a", "b\nc\r\n", "\n", "d", strings.Repeat("x", MaxLine+1)} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	w.Close()
	want := []string{"ab", "c", "", "d" + strings.Repeat("x", MaxLine-1), "xx"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}
