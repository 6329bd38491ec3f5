package main

import (
	"context"
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
