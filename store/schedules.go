package store

import (
	"context"
	"time"
)

// Schedules and webhooks: runs that start themselves. A schedule starts a
// run of a workflow at each slot of a cron expression (host/schedule.go
// computes the slots and decides what each one does); a hook starts one
// for each HTTP request to its endpoint. The store keeps their
// definitions and, for a schedule, how far its slots were handled.

// Overlap is what a schedule does with a slot that comes while the run of
// its previous slot has not ended.
type Overlap string

// Overlap policies.
const (
	OverlapSkip      Overlap = "skip"       // do not start; count the slot as skipped
	OverlapBufferOne Overlap = "buffer-one" // keep at most one such slot; start it when the previous run ends
	OverlapAllow     Overlap = "allow"      // start anyway
)

// Schedule is a stored schedule: its definition and its progress. Every
// update of a stored schedule is conditional on Version (UpdateSchedule),
// so workers sharing a store never both advance it from the same state.
type Schedule struct {
	Name     string        `json:"name"`
	Cron     string        `json:"cron"`     // 5 fields, or 6 with seconds first, or a descriptor (@daily)
	Timezone string        `json:"timezone"` // IANA name; empty: UTC
	Module   string        `json:"module"`   // module name or hash, resolved at each start
	Workflow string        `json:"workflow"`
	Input    []byte        `json:"input"` // JSON
	Overlap  Overlap       `json:"overlap"`
	Catchup  time.Duration `json:"catchup"` // how late a slot may still start
	Paused   bool          `json:"paused"`

	// LastSlot is the latest slot handled (unix ns): started, skipped or
	// buffered. The next slot is the first one after it.
	LastSlot int64 `json:"last_slot"`
	// LastFired is the slot of the latest run started (unix ns; 0: none).
	LastFired int64 `json:"last_fired"`
	// Buffered is the slot kept by OverlapBufferOne (unix ns; 0: none).
	Buffered int64 `json:"buffered"`
	// Fired counts the runs started for slots; Missed the slots skipped
	// because they were older than Catchup; Overlapped the slots skipped
	// by the overlap policy.
	Fired      int64 `json:"fired"`
	Missed     int64 `json:"missed"`
	Overlapped int64 `json:"overlapped"`

	Version   int64     `json:"-"` // set by the store; bumped by each update
	CreatedAt time.Time `json:"-"`
}

// Hook is a webhook: a request to POST /v1/hooks/{Name} starts a run of
// Workflow of Module with the request as its input.
type Hook struct {
	Name     string `json:"name"`
	Module   string `json:"module"`
	Workflow string `json:"workflow"`
	// SecretEnv names the environment variable of the serving process
	// that holds the HMAC secret; Secret names it in the server's hook
	// secrets file instead. Both empty: deliveries are not signed. The
	// secret itself is never stored.
	SecretEnv string `json:"secret_env,omitempty"`
	Secret    string `json:"secret,omitempty"`
	// Scheme is how deliveries are signed: "github" (also when empty) or
	// "timestamped" (host/hooksig.go).
	Scheme string `json:"scheme,omitempty"`
	// Tolerance is how far a timestamped delivery's time may be from the
	// server's; 0: the default.
	Tolerance time.Duration `json:"tolerance,omitempty"`
	// KeepHeaders are credential-looking request headers (canonical
	// names) that the run's input keeps all the same.
	KeepHeaders []string  `json:"keep_headers,omitempty"`
	CreatedAt   time.Time `json:"-"`
}

// ScheduleStore keeps schedules and hooks. Every method is safe for
// concurrent use.
type ScheduleStore interface {
	// CreateSchedule stores a new schedule with Version 1 and returns it.
	// It fails with ErrConflict when one of that name exists.
	CreateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// Schedule returns one schedule, or ErrNotFound.
	Schedule(ctx context.Context, name string) (Schedule, error)
	// Schedules lists every schedule by name.
	Schedules(ctx context.Context) ([]Schedule, error)
	// UpdateSchedule replaces the stored schedule s.Name if its Version
	// is still s.Version, bumps the version and returns it as stored. It
	// fails with ErrConflict when the version changed since s was read,
	// and with ErrNotFound when there is no such schedule.
	UpdateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// DeleteSchedule deletes a schedule (its runs stay), or fails with
	// ErrNotFound.
	DeleteSchedule(ctx context.Context, name string) error

	// CreateHook stores a new hook; ErrConflict when one of that name
	// exists.
	CreateHook(ctx context.Context, h Hook) (Hook, error)
	// Hook returns one hook, or ErrNotFound.
	Hook(ctx context.Context, name string) (Hook, error)
	// Hooks lists every hook by name.
	Hooks(ctx context.Context) ([]Hook, error)
	// DeleteHook deletes a hook (its runs stay), or fails with ErrNotFound.
	DeleteHook(ctx context.Context, name string) error

	// ClaimDelivery records delivery id (a signature) of hook until
	// expires (unix ns) and reports true; it reports false, recording
	// nothing, when the same id of that hook is recorded and its record
	// has not expired at now. One claim of an id wins however many
	// workers share the store. Records expired at now are deleted, so
	// the store holds the deliveries of one tolerance window.
	ClaimDelivery(ctx context.Context, hook, id string, now, expires int64) (bool, error)
	// ReleaseDelivery deletes the record of a claimed delivery (one whose
	// run could not be started), so that it may be delivered again; an id
	// not recorded is no error.
	ReleaseDelivery(ctx context.Context, hook, id string) error
}
