package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/skeinrun/skein/host"
)

// retentionFlags are the flags of `skein serve`'s pruner
// (docs/operations.md, "Retention").
type retentionFlags struct {
	retention *string
	every     *time.Duration
	age       time.Duration // --retention, parsed by check
}

func addRetentionFlags(fs *flag.FlagSet) *retentionFlags {
	return &retentionFlags{
		retention: fs.String("retention", "30d", "how long a run that ended is kept; then the pruner deletes it with all its records, unless a live run needs it: a duration (720h) or days (30d); 0 keeps every run"),
		every:     fs.Duration("prune-interval", host.DefaultPruneEvery, "how often the pruner looks for runs to delete, moved at random by up to a fifth (tests set it short)"),
	}
}

// check parses --retention and checks --prune-interval.
func (f *retentionFlags) check() error {
	age, err := host.ParseAge(*f.retention)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--retention: %w", err)}
	}
	if *f.every < time.Millisecond {
		return &exitError{code: exitUsage, err: fmt.Errorf("--prune-interval %s: want at least 1ms", *f.every)}
	}
	f.age = age
	return nil
}

// apply sets the host's retention: --retention 0 keeps every run.
func (f *retentionFlags) apply(cfg *host.Config) {
	cfg.Retention, cfg.PruneEvery = f.age, *f.every
	if f.age == 0 {
		cfg.Retention = -1
	}
}
