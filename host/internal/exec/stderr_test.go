package exec

import (
	"strings"
	"testing"
)

// The stderr kept for a failure message holds the first stderrHead bytes
// (where a Go guest prints its fatal error) and the last stderrTail, says
// where it cut, and notes "out of memory" wherever it was written, split
// across two writes too.
func TestStderrBuffer(t *testing.T) {
	var b stderrBuffer
	for _, p := range []string{"fatal error: out of ", "memory\n", strings.Repeat("g", stderrHead+stderrTail), "end"} {
		if n, err := b.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write of %d bytes: %d, %v", len(p), n, err)
		}
	}
	s := b.String()
	if !strings.HasPrefix(s, "fatal error: out of memory\n") || !strings.HasSuffix(s, "gend") || !strings.Contains(s, "[… stderr cut …]") {
		t.Errorf("kept %q … %q", s[:40], s[len(s)-40:])
	}
	if len(s) > stderrHead+stderrTail+len("\n[… stderr cut …]\n") || !b.oom {
		t.Errorf("kept %d bytes, oom %v", len(s), b.oom)
	}
	var short stderrBuffer
	short.Write([]byte("no trouble"))
	if short.String() != "no trouble" || short.oom {
		t.Errorf("short: %q, oom %v", short.String(), short.oom)
	}
}
