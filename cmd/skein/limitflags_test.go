package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/skeinrun/skein/internal/limitflags"
)

// TestLimitHintsNameRealFlags: every flag that the CLI's LimitHint
// (internal/limitflags) names in a limit's error is a flag of skein run
// and skein serve.
func TestLimitHintsNameRealFlags(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addLimitFlags(fs, true)
	for field, fl := range limitflags.All() {
		if fs.Lookup(strings.TrimPrefix(fl, "--")) == nil {
			t.Errorf("limitflags maps Config.%s to %s, which is not a flag", field, fl)
		}
	}
}
