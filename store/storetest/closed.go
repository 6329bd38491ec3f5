package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/skeinrun/skein/store"
)

// CheckClosed calls every method of s, which the caller has closed, and
// requires each to fail with an error that errors.Is finds want in (the
// backend's ErrClosed).
func CheckClosed(t *testing.T, s store.Store, want error) {
	t.Helper()
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"PutModule": func() error { return s.PutModule(ctx, store.Module{Hash: "h"}) },
		"Module":    func() error { _, err := s.Module(ctx, "h"); return err },
		"Modules":   func() error { _, err := s.Modules(ctx); return err },
		"CreateRun": func() error { _, _, err := s.CreateRun(ctx, store.Run{ID: "r2"}); return err },
		"Run":       func() error { _, err := s.Run(ctx, "r"); return err },
		"Runs":      func() error { _, err := s.Runs(ctx, store.RunFilter{}); return err },
		"DueRuns":   func() error { _, err := s.DueRuns(ctx, 0, 0); return err },
		"Settle": func() error {
			return s.Settle(ctx, store.Settlement{RunID: "r", Key: "k", Status: store.OutcomeOK})
		},
		"Settlements":   func() error { _, err := s.Settlements(ctx, "r"); return err },
		"RequestCancel": func() error { _, err := s.RequestCancel(ctx, "r", "x"); return err },
		"PauseRun":      func() error { _, err := s.PauseRun(ctx, "r", "ops", "x", 1); return err },
		"UnpauseRun":    func() error { _, err := s.UnpauseRun(ctx, "r"); return err },
		"Commit":        func() error { return s.Commit(ctx, store.Batch{}) },
		"ResetRun": func() error {
			_, err := s.ResetRun(ctx, store.Reset{From: "r", Batch: store.Batch{Creates: []store.Run{{ID: "r2", ResetFrom: "r"}}}})
			return err
		},
		"Outcomes": func() error { _, err := s.Outcomes(ctx, "r"); return err },
		"Outcome":  func() error { _, err := s.Outcome(ctx, "r", "k"); return err },
		"CommitTasks": func() error {
			return s.Commit(ctx, store.Batch{Tasks: []store.Task{{RunID: "r", Key: "k", Name: "n"}}})
		},
		"ClaimTasks": func() error {
			_, err := s.ClaimTasks(ctx, store.TaskClaim{Owner: "w", Names: []string{"n"}, Max: 1, TTL: 1})
			return err
		},
		"HeartbeatTask": func() error { _, err := s.HeartbeatTask(ctx, "r", "k", 1, "w", 0, 1, nil); return err },
		"EndTask": func() error {
			return s.EndTask(ctx, store.TaskEnd{RunID: "r", Key: "k", Attempt: 1, Retry: &store.TaskRetry{}})
		},
		"ExpiredTasks": func() error { _, err := s.ExpiredTasks(ctx, 0, 1); return err },
		"CancelTasks":  func() error { return s.CancelTasks(ctx, "r", "x") },
		"Tasks":        func() error { _, err := s.Tasks(ctx, "r"); return err },
		"Task":         func() error { _, err := s.Task(ctx, "r", "k"); return err },
		"TaskQueues":   func() error { _, err := s.TaskQueues(ctx); return err },
		"PruneRuns":    func() error { _, err := s.PruneRuns(ctx, "", 1, 1, false); return err },
		"PruneDryRun":  func() error { _, err := s.PruneRuns(ctx, "", 1, 1, true); return err },
		"DeleteRun":    func() error { return s.DeleteRun(ctx, "r") },
		"CreateBatchJob": func() error {
			_, err := s.CreateBatchJob(ctx, store.BatchJob{ID: "b", Action: "cancel"})
			return err
		},
		"BatchJob":       func() error { _, err := s.BatchJob(ctx, "b"); return err },
		"BatchJobs":      func() error { _, err := s.BatchJobs(ctx, 1); return err },
		"CancelBatchJob": func() error { _, err := s.CancelBatchJob(ctx, "b", "x"); return err },
		"ClaimBatchJob":  func() error { _, _, err := s.ClaimBatchJob(ctx, "w", 0, 1); return err },
		"SaveBatchJob": func() error {
			_, err := s.SaveBatchJob(ctx, store.BatchJob{ID: "b", LeaseOwner: "w", LeaseToken: 1}, 1)
			return err
		},
		"CreateAttr": func() error {
			_, err := s.CreateAttr(ctx, store.AttrDecl{Name: "a", Type: store.AttrInt})
			return err
		},
		"Attrs":      func() error { _, err := s.Attrs(ctx); return err },
		"DeleteAttr": func() error { return s.DeleteAttr(ctx, "a") },
		"RunAttrs":   func() error { _, err := s.RunAttrs(ctx, []string{"r"}); return err },
		"CommitAttrs": func() error {
			return s.Commit(ctx, store.Batch{Attrs: []store.RunAttrs{{RunID: "r", Values: map[string]any{"a": int64(1)}}}})
		},
		"CreateNamespace": func() error {
			_, err := s.CreateNamespace(ctx, store.Namespace{Name: "acme", Weight: 1})
			return err
		},
		"Namespace":  func() error { _, err := s.Namespace(ctx, "default"); return err },
		"Namespaces": func() error { _, err := s.Namespaces(ctx); return err },
		"UpdateNamespace": func() error {
			_, err := s.UpdateNamespace(ctx, store.Namespace{Name: "default", Weight: 1})
			return err
		},
		"DeleteNamespace": func() error { return s.DeleteNamespace(ctx, "acme") },
	} {
		if err := call(); !errors.Is(err, want) {
			t.Errorf("%s after Close: %v, want %v", name, err, want)
		}
	}
}
