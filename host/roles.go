package host

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/store"
)

// Client is the client role of a Host: what a program that deploys
// modules, starts runs, settles their promises and watches them uses. The
// HTTP server (package server) needs nothing more. It executes nothing:
// runs execute where a Worker works.
type Client interface {
	// In returns the view of namespace ns (view.go).
	In(ns string) (Client, error)
	Deploy(ctx context.Context, name string, wasm []byte) (store.Module, error)
	DeployReader(ctx context.Context, name string, r io.Reader, size int64) (store.Module, error)
	Start(ctx context.Context, o StartOptions) (store.Run, error)
	Resolve(ctx context.Context, fullID string, value json.RawMessage, errMsg string) error
	Cancel(ctx context.Context, runID, reason string) (store.Run, error)
	// Holding runs (pause.go).
	Pause(ctx context.Context, runID, by, reason string) (store.Run, error)
	Unpause(ctx context.Context, runID string) (store.Run, error)
	ResumeOn(ctx context.Context, runID, module string) (store.Run, error)
	Reset(ctx context.Context, o ResetOptions) (store.Run, error)
	Await(ctx context.Context, runID string) (store.Run, error)
	Inspect(ctx context.Context, runID string) (store.Run, []Outcome, error)
	Run(ctx context.Context, id string) (store.Run, error)
	Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error)
	Module(ctx context.Context, ref string) (store.Module, error)
	Modules(ctx context.Context) ([]store.Module, error)
	LeaseHistory(ctx context.Context, id string) ([]store.LeaseRecord, error)
	// Attempts returns the run's recorded attempts and instance drops,
	// for the timeline (timeline.go).
	Attempts(ctx context.Context, runID string) ([]store.Attempt, error)
	Subscribe(o SubscribeOptions) *Subscription
	WriteMetrics(ctx context.Context, w io.Writer) error
	// MetricsGatherer is what GET /metrics serves (metrics.go).
	MetricsGatherer(ctx context.Context) prometheus.Gatherer
	NewLimitError(what, limit, value string) *LimitError
	// The worker protocol: remote activity tasks (taskapi.go).
	ClaimTasks(ctx context.Context, o ClaimOptions) ([]store.Task, error)
	HeartbeatTask(ctx context.Context, ref TaskRef, progress json.RawMessage) (store.Task, error)
	CompleteTask(ctx context.Context, ref TaskRef, value json.RawMessage) error
	FailTask(ctx context.Context, ref TaskRef, msg string, nonRetryable bool) (bool, error)
	Tasks(ctx context.Context, runID string) ([]store.Task, error)
	// Schedules (schedule.go) and webhooks (hooks.go).
	CreateSchedule(ctx context.Context, o ScheduleOptions) (ScheduleInfo, error)
	Schedule(ctx context.Context, name string) (ScheduleInfo, error)
	Schedules(ctx context.Context) ([]ScheduleInfo, error)
	PauseSchedule(ctx context.Context, name string) (ScheduleInfo, error)
	ResumeSchedule(ctx context.Context, name string) (ScheduleInfo, error)
	DeleteSchedule(ctx context.Context, name string) error
	TriggerSchedule(ctx context.Context, name string) (store.Run, error)
	CreateHook(ctx context.Context, o HookOptions) (store.Hook, error)
	Hook(ctx context.Context, name string) (store.Hook, error)
	Hooks(ctx context.Context) ([]store.Hook, error)
	DeleteHook(ctx context.Context, name string) error
	Deliver(ctx context.Context, name string, d Delivery) (store.Run, bool, error)
	// Retention (retention.go).
	Prune(ctx context.Context, before time.Time, dryRun bool) (PruneReport, error)
	DeleteRun(ctx context.Context, id string) error
	// The filter language and batches (batch.go).
	ParseFilter(ctx context.Context, where string, now time.Time) (store.RunFilter, error)
	StartBatch(ctx context.Context, o BatchOptions) (store.BatchJob, error)
	DryRunBatch(ctx context.Context, where string, limit int) ([]store.Run, bool, error)
	Batch(ctx context.Context, id string) (store.BatchJob, error)
	Batches(ctx context.Context, limit int) ([]store.BatchJob, error)
	CancelBatch(ctx context.Context, id, reason string) (store.BatchJob, error)
	// Search attributes (attrs.go).
	CreateAttribute(ctx context.Context, name string, t store.AttrType) (store.AttrDecl, error)
	Attributes(ctx context.Context) ([]store.AttrDecl, error)
	DeleteAttribute(ctx context.Context, name string) error
	RunAttributes(ctx context.Context, ids ...string) (map[string]map[string]any, error)
	// Namespace records (namespaces.go).
	CreateNamespace(ctx context.Context, name string, o NamespaceOptions) (store.Namespace, error)
	Namespace(ctx context.Context, name string) (store.Namespace, error)
	Namespaces(ctx context.Context) ([]store.Namespace, error)
	UpdateNamespace(ctx context.Context, name string, o NamespaceOptions) (store.Namespace, error)
	DeleteNamespace(ctx context.Context, name string) error
}

// Worker is the worker role of a Host: what executes runs, with the
// activities and grants they call.
type Worker interface {
	Work(ctx context.Context, o WorkOptions) error
	Drive(ctx context.Context, runID string, o DriveOptions) (store.Run, error)
	Resume(ctx context.Context, runID, module string, o DriveOptions) (store.Run, error)
	Replay(ctx context.Context, runID string) (ReplayResult, error)
	RegisterActivity(name string, fn activity.Func)
	Grant(module string, activities ...string)
}

// A Host plays both roles; a process may use one (a server that only
// accepts requests, a worker that only executes) or both.
var (
	_ Client = (*Host)(nil)
	_ Worker = (*Host)(nil)
)
