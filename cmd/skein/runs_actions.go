package main

import (
	"context"
	"encoding/json"
	"io"
)

// The batch actions of `skein runs` beside cancel (runs_batch.go): each
// starts a batch of its action over the runs --where selects
// (docs/operations.md, "Bulk actions") and follows it.

// runsPause is `skein runs pause --where F [--reason R]`.
func runsPause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	b := addBatchFlags(fs)
	reason := fs.String("reason", "", "why (shown with each paused run)")
	return b.runBatch(ctx, fs, args, "pause", func() any {
		return struct {
			Reason string `json:"reason,omitempty"`
		}{*reason}
	}, stdout, stderr)
}

// runsUnpause is `skein runs unpause --where F`.
func runsUnpause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	b := addBatchFlags(fs)
	return b.runBatch(ctx, fs, args, "unpause", func() any { return struct{}{} }, stdout, stderr)
}

// runsResume is `skein runs resume --where F [--module M]`.
func runsResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	b := addBatchFlags(fs)
	module := fs.String("module", "", "the deployed module (name or hash) each run continues on; default: its own")
	return b.runBatch(ctx, fs, args, "resume", func() any {
		return struct {
			Module string `json:"module,omitempty"`
		}{*module}
	}, stdout, stderr)
}

// runsDelete is `skein runs delete --where F`.
func runsDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	b := addBatchFlags(fs)
	return b.runBatch(ctx, fs, args, "delete", func() any { return struct{}{} }, stdout, stderr)
}

// runsReset is `skein runs reset --where F --to KEY [--module M] [--input JSON]`.
func runsReset(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("runs", stderr)
	b := addBatchFlags(fs)
	to := fs.String("to", "", "the key each run is reset to (docs/api.md, \"Resetting a run\"); required")
	module := fs.String("module", "", "the deployed module (name or hash) the new runs execute; default: each run's own")
	input := fs.String("input", "", "the new runs' input (JSON); default: each run's own")
	return b.runBatch(ctx, fs, args, "reset", func() any {
		return struct {
			To     string          `json:"to"`
			Module string          `json:"module,omitempty"`
			Input  json.RawMessage `json:"input,omitempty"`
		}{*to, *module, json.RawMessage(*input)}
	}, stdout, stderr)
}
