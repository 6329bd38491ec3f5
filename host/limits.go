package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/skeinrun/skein/host/internal/limit"

	"github.com/skeinrun/skein/store"
)

// Default resource limits (Config; docs/limits.md).
const (
	DefaultMemoryLimitPages   = 4096 // 256 MiB
	DefaultMaxRunWithoutYield = 5 * time.Second
	DefaultMaxPayloadBytes    = 4 << 20
	DefaultMaxOps             = 1_000_000
	DefaultMaxTasks           = 10_000
	DefaultMaxModuleBytes     = 64 << 20
	DefaultMaxExecutionTime   = 24 * time.Hour
	DefaultMaxExecutionCPU    = 10 * time.Minute
	DefaultMaxChildDepth      = 8
	DefaultMaxChildren        = 1000
)

// CancelGrace is how long a cancellation (or an expired run timeout) waits
// for a running execution to reach an idle point, where the workflow sees
// it and may compensate. An execution that reaches none in time (it is
// busy in workflow code or in a step body) is stopped, and the run ends
// canceled.
const CancelGrace = time.Second

func (c *Config) setLimitDefaults() {
	if c.MaxRunWithoutYield == 0 {
		c.MaxRunWithoutYield = DefaultMaxRunWithoutYield
	}
	if c.MaxExecutionTime == 0 {
		c.MaxExecutionTime = DefaultMaxExecutionTime
	}
	if c.MaxChildDepth <= 0 {
		c.MaxChildDepth = DefaultMaxChildDepth
	}
	if c.MaxChildren <= 0 {
		c.MaxChildren = DefaultMaxChildren
	}
	if c.MaxExecutionCPU == 0 {
		c.MaxExecutionCPU = DefaultMaxExecutionCPU
	}
	if c.MaxPayloadBytes <= 0 {
		c.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if c.MaxOps <= 0 {
		c.MaxOps = DefaultMaxOps
	}
	if c.MaxJournalOps <= 0 {
		c.MaxJournalOps = DefaultMaxJournalOps
	}
	if c.MaxTasks <= 0 {
		c.MaxTasks = DefaultMaxTasks
	}
	if c.MaxModuleBytes <= 0 {
		c.MaxModuleBytes = DefaultMaxModuleBytes
	}
}

// LimitError reports a run (or a module, or a request) that went over one
// of the host's resource limits. The run fails with it as its error; one
// run's limit never affects another run.
type LimitError = limit.Error

// NewLimitError returns the error of what going over the limit of
// Config field limit, whose value is value, with the hint of
// Config.LimitHint. The host builds its own this way; a server on the
// host uses it for the limits it checks itself.
func (h *Host) NewLimitError(what, limit, value string) *LimitError {
	return h.cfg.limitError(what, limit, value)
}

func (c *Config) limitError(what, field, value string) *LimitError {
	return limit.Hints(c.LimitHint).New(what, field, value)
}

// hintSuffix is "; hint", or "" for no hint.
func hintSuffix(hint string) string { return limit.Suffix(hint) }

// limitHint is Config.LimitHint's hint for field.
func (c *Config) limitHint(field string) string { return limit.Hints(c.LimitHint).Of(field) }

func bytesValue(n int64) string { return limit.Bytes(n) }

func (h *Host) payloadError(what string, n int) *LimitError {
	return h.cfg.limitError(fmt.Sprintf("%s is %d bytes", what, n), "MaxPayloadBytes", bytesValue(int64(h.cfg.MaxPayloadBytes)))
}

// runInput is the input of a run about to be started or scheduled: null
// if empty; refused (ErrInvalid) over MaxPayloadBytes or if it is not
// JSON.
func (h *Host) runInput(in json.RawMessage) ([]byte, error) {
	input := []byte(in)
	if len(input) == 0 {
		input = []byte("null")
	}
	if len(input) > h.cfg.MaxPayloadBytes {
		return nil, invalidf("%w", h.payloadError("the input", len(input)))
	}
	if !json.Valid(input) || !utf8.Valid(input) {
		return nil, invalidf("input is not valid JSON in UTF-8: %.100q", input)
	}
	return input, nil
}

// runDepth counts the ancestors of r, reading at most limit+1 of them.
func (h *Host) runDepth(ctx context.Context, r store.Run, limit int) (int, error) {
	d := 0
	for p := r.Parent; p != "" && d <= limit; d++ {
		pr, err := h.cfg.Store.Run(ctx, p)
		if err != nil {
			return 0, fmt.Errorf("parent run %s: %w", p, err)
		}
		p = pr.Parent
	}
	return d, nil
}

func (h *Host) moduleSizeError(label string, n int64) error {
	le := h.cfg.limitError(fmt.Sprintf("the module is %d bytes", n), "MaxModuleBytes", bytesValue(int64(h.cfg.MaxModuleBytes)))
	return &ModuleError{Module: label, Reason: le.Error(), Err: le}
}

// memoryError names the memory limit when a guest died of running out of
// linear memory (a Go guest prints "out of memory" and exits with code 2,
// or traps): oom says it printed that.
func (h *Host) memoryError(failure error, oom bool) error {
	if !oom {
		return failure
	}
	pages := int64(h.cfg.MemoryLimitPages)
	return fmt.Errorf("%w\n%v", h.cfg.limitError("the module ran out of linear memory", "MemoryLimitPages", fmt.Sprintf("%d pages (%d MiB)", pages, pages*64>>10)), failure)
}
