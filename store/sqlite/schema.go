package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
)

// migrations is the ordered list of schema changes. The database's
// PRAGMA user_version is the number of migrations applied. Never edit or
// reorder an entry once released; append a new one.
var migrations = []string{
	// 1: initial schema.
	`
CREATE TABLE modules (
	hash        TEXT PRIMARY KEY,
	name        TEXT NOT NULL DEFAULT '',
	bytes       BLOB NOT NULL,
	abi_version INTEGER NOT NULL,
	workflows   TEXT NOT NULL DEFAULT '[]', -- JSON array of names
	created_at  INTEGER NOT NULL,           -- unix ns
	named_seq   INTEGER NOT NULL DEFAULT 0  -- order in which modules were last stored under their name
);
CREATE INDEX modules_name ON modules (name, named_seq);

CREATE TABLE runs (
	id           TEXT PRIMARY KEY,
	module_hash  TEXT NOT NULL,
	workflow     TEXT NOT NULL,
	input        BLOB,
	status       TEXT NOT NULL,
	result       BLOB,
	error        TEXT NOT NULL DEFAULT '',
	seed         INTEGER NOT NULL,          -- uint64 stored as its int64 bit pattern
	parent       TEXT NOT NULL DEFAULT '',
	start_time   INTEGER NOT NULL DEFAULT 0, -- unix ns
	wake_at      INTEGER NOT NULL DEFAULT 0, -- unix ns; 0 = none
	lease_owner  TEXT NOT NULL DEFAULT '',   -- reserved for leases
	lease_expiry INTEGER NOT NULL DEFAULT 0, -- reserved for leases
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);
CREATE INDEX runs_status ON runs (status, id);
CREATE INDEX runs_status_wake ON runs (status, wake_at);

CREATE TABLE outcomes (
	run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	kind       TEXT NOT NULL,
	function   TEXT NOT NULL,
	status     TEXT NOT NULL,
	value      BLOB,
	error      TEXT NOT NULL DEFAULT '',
	attempts   INTEGER NOT NULL DEFAULT 0,
	seq        INTEGER NOT NULL DEFAULT 0,
	waited     INTEGER NOT NULL DEFAULT 0,
	idle       INTEGER NOT NULL DEFAULT 0,
	wake_order INTEGER NOT NULL DEFAULT 0,
	vtime      INTEGER NOT NULL DEFAULT 0,
	deadline   INTEGER NOT NULL DEFAULT 0,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, key)
);
CREATE INDEX outcomes_seq ON outcomes (run_id, seq);
`,
	// 2: outcomes a run's latest execution never reached.
	`ALTER TABLE outcomes ADD COLUMN orphaned INTEGER NOT NULL DEFAULT 0;`,
	// 3: run timeouts, cancellation requests, and settlements delivered
	// from outside a run's execution (external promises, child results).
	`
ALTER TABLE runs ADD COLUMN deadline INTEGER NOT NULL DEFAULT 0;    -- unix ns; 0 = none
ALTER TABLE runs ADD COLUMN cancel TEXT NOT NULL DEFAULT '';        -- reason; '' = not requested
CREATE TABLE settlements (
	run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	status     TEXT NOT NULL,
	value      BLOB,
	error      TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	PRIMARY KEY (run_id, key)
);
`,
	// 4: worker leases: the token of a run's latest claim (lease_owner and
	// lease_expiry were reserved in migration 1), and the history of
	// every claim.
	`
ALTER TABLE runs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0; -- token of the latest claim; 0 = never claimed
CREATE TABLE leases (
	run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	token       INTEGER NOT NULL,
	owner       TEXT NOT NULL,
	claimed_at  INTEGER NOT NULL,           -- unix ns
	expiry      INTEGER NOT NULL,           -- unix ns; latest expiry (claim or renewal)
	released_at INTEGER NOT NULL DEFAULT 0, -- unix ns; 0 = not released
	PRIMARY KEY (run_id, token)
);
`,
	// 5: due runs found by index only: runs.waiting is 1 while a
	// settlement or a cancellation waits to be delivered to a suspended
	// run (kept by every write that can change it); suspended runs past
	// their deadline are found by (status, deadline).
	`
ALTER TABLE runs ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_status_deadline ON runs (status, deadline);
CREATE INDEX runs_waiting ON runs (wake_at, id) WHERE waiting = 1;
UPDATE runs SET waiting = (
	EXISTS (SELECT 1 FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
		WHERE s.run_id = runs.id AND o.status = 'pending')
	OR (cancel <> '' AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.run_id = runs.id AND o.key = '!cancel')))
WHERE status = 'suspended';
`,
	// 6: what is recorded is write-once (see store.Batch): a settled
	// outcome keeps its status, value, error, kind and function; a
	// completed or canceled run keeps its status, result, error and module.
	`
CREATE TRIGGER outcomes_write_once BEFORE UPDATE ON outcomes
WHEN OLD.status <> 'pending' AND (NEW.status IS NOT OLD.status
	OR coalesce(NEW.value, x'') IS NOT coalesce(OLD.value, x'') OR NEW.error IS NOT OLD.error
	OR NEW.kind IS NOT OLD.kind OR NEW.function IS NOT OLD.function)
BEGIN
	SELECT RAISE(ABORT, '` + writeOnceMark + `run ' || OLD.run_id || ': settled outcome ' || OLD.key || ' (' || OLD.status || ') cannot change');
END;
CREATE TRIGGER runs_write_once BEFORE UPDATE OF module_hash, status, result, error ON runs
WHEN OLD.status IN ('completed', 'canceled') AND (NEW.status IS NOT OLD.status
	OR coalesce(NEW.result, x'') IS NOT coalesce(OLD.result, x'') OR NEW.error IS NOT OLD.error
	OR NEW.module_hash IS NOT OLD.module_hash)
BEGIN
	SELECT RAISE(ABORT, '` + writeOnceMark + `run ' || OLD.id || ' is ' || OLD.status || ': its status, result, error and module cannot change');
END;
`,
	// 7: activity tasks for remote workers (store.TaskStore), the
	// fair-queueing clock of their claims, and the attempts a task's
	// settlement counts.
	`
ALTER TABLE settlements ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
CREATE TABLE tasks (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	name       TEXT NOT NULL,
	input      BLOB,
	options    BLOB,
	timeout    INTEGER NOT NULL DEFAULT 0, -- ns per attempt; 0 = none
	attempt    INTEGER NOT NULL,
	state      TEXT NOT NULL,              -- queued, claimed, done, canceled
	tag        INTEGER NOT NULL,           -- fair-queueing order of claims
	visible_at INTEGER NOT NULL,           -- unix ns
	owner      TEXT NOT NULL DEFAULT '',
	claimed_at INTEGER NOT NULL DEFAULT 0,
	heartbeat  INTEGER NOT NULL DEFAULT 0,
	expiry     INTEGER NOT NULL DEFAULT 0,
	progress   BLOB,
	last_error TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	UNIQUE (run_id, key)
);
CREATE INDEX tasks_queue ON tasks (name, tag, seq) WHERE state = 'queued';
CREATE INDEX tasks_leases ON tasks (expiry) WHERE state = 'claimed';
CREATE INDEX tasks_run_tag ON tasks (run_id, tag);
CREATE TABLE task_clock (id INTEGER PRIMARY KEY CHECK (id = 1), v INTEGER NOT NULL);
INSERT INTO task_clock (id, v) VALUES (1, 0);
`,
	// 8: a module's bytes move to a table of their own. A row read walks
	// every column before the ones it returns, and a Go guest's bytes span
	// hundreds of overflow pages: reading a module's name, size and
	// workflows, as every start of a run does, read them all.
	`
CREATE TABLE module_bytes (
	hash  TEXT PRIMARY KEY,
	bytes BLOB NOT NULL
);
INSERT INTO module_bytes (hash, bytes) SELECT hash, bytes FROM modules;
ALTER TABLE modules ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
UPDATE modules SET size = length(bytes);
ALTER TABLE modules DROP COLUMN bytes;
`,
	// 9: the timeline (docs/ui.md): when each op was first issued and
	// when its settlement was recorded, and each attempt of an op (and
	// each instance drop, at key '!idle'), by the host's wall clock;
	// observability data, never replayed.
	`
ALTER TABLE outcomes ADD COLUMN started_at INTEGER NOT NULL DEFAULT 0; -- unix ns; 0 = not known
ALTER TABLE outcomes ADD COLUMN settled_at INTEGER NOT NULL DEFAULT 0; -- unix ns; 0 = pending or not known
CREATE TABLE attempts (
	run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	n          INTEGER NOT NULL,
	started_at INTEGER NOT NULL DEFAULT 0, -- unix ns; 0 = not known
	ended_at   INTEGER NOT NULL DEFAULT 0, -- unix ns; 0 = running or not known
	error      TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, key, n)
);
`,
	// 10: continue-as-new: a run that continued (status 'continued') is
	// write-once like a completed or canceled one (store.RunStatus.Final).
	`
DROP TRIGGER runs_write_once;
CREATE TRIGGER runs_write_once BEFORE UPDATE OF module_hash, status, result, error ON runs
WHEN OLD.status IN ('completed', 'canceled', 'continued') AND (NEW.status IS NOT OLD.status
	OR coalesce(NEW.result, x'') IS NOT coalesce(OLD.result, x'') OR NEW.error IS NOT OLD.error
	OR NEW.module_hash IS NOT OLD.module_hash)
BEGIN
	SELECT RAISE(ABORT, '` + writeOnceMark + `run ' || OLD.id || ' is ' || OLD.status || ': its status, result, error and module cannot change');
END;
`,
	// 11: schedules and webhooks (store.ScheduleStore): each row holds
	// its record as JSON; a schedule's version makes its updates
	// conditional.
	`
CREATE TABLE schedules (
	name       TEXT PRIMARY KEY,
	doc        BLOB NOT NULL,    -- store.Schedule as JSON
	version    INTEGER NOT NULL, -- bumped by each update
	created_at INTEGER NOT NULL  -- unix ns
);
CREATE TABLE hooks (
	name       TEXT PRIMARY KEY,
	doc        BLOB NOT NULL,    -- store.Hook as JSON
	created_at INTEGER NOT NULL  -- unix ns
);
`,
	// 12: typed promises: the JSON Schema of a promise's value, and of each
	// workflow's input (a JSON object by workflow name); NULL for none.
	`
ALTER TABLE outcomes ADD COLUMN schema BLOB;
ALTER TABLE modules ADD COLUMN input_schemas TEXT;
`,
	// 13: a module may carry several names. A row is a name a module was
	// stored under, with when it last was (seq); a name points at the
	// module of its newest row. Every module keeps the names it was
	// stored under (a grant by name applies to them), and every name
	// keeps pointing at the module it named.
	`
CREATE TABLE module_names (
	name TEXT NOT NULL,
	hash TEXT NOT NULL,
	seq  INTEGER NOT NULL, -- order in which modules were stored under names
	PRIMARY KEY (name, hash)
);
CREATE INDEX module_names_seq ON module_names (name, seq);
CREATE INDEX module_names_hash ON module_names (hash, seq);
INSERT INTO module_names (name, hash, seq) SELECT name, hash, named_seq FROM modules WHERE name <> '';
DROP INDEX modules_name;
ALTER TABLE modules DROP COLUMN name;
ALTER TABLE modules DROP COLUMN named_seq;
`,
	// 14: the signatures of webhook deliveries accepted within their
	// hook's tolerance window (store.ScheduleStore.ClaimDelivery): a
	// replay of one is refused until it expires.
	`
CREATE TABLE hook_deliveries (
	hook    TEXT NOT NULL,
	id      TEXT NOT NULL,
	expires INTEGER NOT NULL, -- unix ns
	PRIMARY KEY (hook, id)
);
CREATE INDEX hook_deliveries_expires ON hook_deliveries (expires);
`,
	// 15: what a parent's end does to a child run that has not ended
	// (store.ParentClose), and whether it abandoned it.
	`
ALTER TABLE runs ADD COLUMN parent_close TEXT NOT NULL DEFAULT ''; -- '' or 'cancel': canceled; 'abandon': left running
ALTER TABLE runs ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0; -- 1: its parent ended first and left it running
`,
	// 16: traces (docs/observability.md): the W3C traceparent a run was
	// started under (its run span's parent), and that of the call op an
	// activity task serves (its attempts' spans' parent).
	`
ALTER TABLE runs ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''; -- '' = none given
ALTER TABLE tasks ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''; -- '' = not traced
`,
	// 17: paused runs (store.Store.PauseRun): who paused a run, why and
	// since when; a paused run is never due nor claimed.
	`
ALTER TABLE runs ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN pause_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN paused_at INTEGER NOT NULL DEFAULT 0; -- unix ns; 0 = not paused
`,
	// 18: retention (store.PruneStore): a run's continue-as-new chain
	// (store.ChainRoot of its id: the id without a "~N" suffix), and the
	// indexes that find ended runs by end time, a run's children and the
	// runs of a chain.
	`
ALTER TABLE runs ADD COLUMN chain TEXT GENERATED ALWAYS AS (CASE
	WHEN substr(rtrim(id, '0123456789'), -1) = '~'
		AND length(id) - length(rtrim(id, '0123456789')) BETWEEN 1 AND 18
		AND substr(id, length(rtrim(id, '0123456789')) + 1, 1) <> '0'
		AND substr(id, length(rtrim(id, '0123456789')) + 1) <> '1'
	THEN substr(id, 1, length(rtrim(id, '0123456789')) - 1)
	ELSE id END) VIRTUAL;
CREATE INDEX runs_chain ON runs (chain);
CREATE INDEX runs_parent ON runs (parent);
CREATE INDEX runs_ended ON runs (status, updated_at, id);
`,
	// 19: batch jobs (store.BatchJobStore): the claim's columns, and
	// the job's definition and progress as JSON (doc).
	`
CREATE TABLE batch_jobs (
	id           TEXT PRIMARY KEY,
	status       TEXT NOT NULL, -- running, done, canceled
	cancel       TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL, -- unix ns
	lease_owner  TEXT NOT NULL DEFAULT '',
	lease_expiry INTEGER NOT NULL DEFAULT 0,
	lease_token  INTEGER NOT NULL DEFAULT 0,
	doc          TEXT NOT NULL
);
CREATE INDEX batch_jobs_running ON batch_jobs (status, created_at, id);
CREATE INDEX batch_jobs_created ON batch_jobs (created_at, id);
`,
	// 20: search attributes (store.AttrStore): the declarations, keyed
	// by namespace (all 'default' until namespaces exist) and name, and
	// each run's values, one typed column per kind of value
	// (store.AttrColumn), indexed by (name, value) for filters.
	`
CREATE TABLE attr_decls (
	namespace  TEXT NOT NULL DEFAULT 'default',
	name       TEXT NOT NULL,
	type       TEXT NOT NULL,    -- string, int, float, bool, time
	created_at INTEGER NOT NULL, -- unix ns
	PRIMARY KEY (namespace, name)
);
CREATE TABLE run_attrs (
	run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	name   TEXT NOT NULL,
	type   TEXT NOT NULL,
	v_text TEXT,    -- a string
	v_int  INTEGER, -- an int, a bool (0, 1), a time (unix ns)
	v_real REAL,    -- a float
	PRIMARY KEY (run_id, name)
);
CREATE INDEX run_attrs_text ON run_attrs (name, v_text);
CREATE INDEX run_attrs_int ON run_attrs (name, v_int);
CREATE INDEX run_attrs_real ON run_attrs (name, v_real);
`,
	// 21: resets (host.Reset): the run a reset made (reset_to, on the run
	// reset) and the run and key it was made from (on the new run). A
	// reset run (status 'reset') is write-once; the one change allowed of
	// an ended run is its reset, which sets reset_to in the same update.
	`
ALTER TABLE runs ADD COLUMN reset_to TEXT NOT NULL DEFAULT '';   -- '' = not reset
ALTER TABLE runs ADD COLUMN reset_from TEXT NOT NULL DEFAULT ''; -- '' = not made by a reset
ALTER TABLE runs ADD COLUMN reset_key TEXT NOT NULL DEFAULT '';
DROP TRIGGER runs_write_once;
CREATE TRIGGER runs_write_once BEFORE UPDATE OF module_hash, status, result, error ON runs
WHEN OLD.status IN ('completed', 'canceled', 'continued', 'reset') AND (
	NEW.status IS NOT OLD.status AND NOT (NEW.status = 'reset' AND OLD.reset_to = '' AND NEW.reset_to <> '')
	OR coalesce(NEW.result, x'') IS NOT coalesce(OLD.result, x'') OR NEW.error IS NOT OLD.error
	OR NEW.module_hash IS NOT OLD.module_hash)
BEGIN
	SELECT RAISE(ABORT, '` + writeOnceMark + `run ' || OLD.id || ' is ' || OLD.status || ': its status, result, error and module cannot change');
END;
`,
	// 22: namespaces own modules (store.Module.Namespaces): a module's
	// bytes are stored once, and each namespace that uploaded them owns
	// it. Every module stored before belongs to namespace default.
	`
CREATE TABLE module_owners (
	namespace TEXT NOT NULL,
	hash      TEXT NOT NULL,
	PRIMARY KEY (namespace, hash)
);
CREATE INDEX module_owners_hash ON module_owners (hash);
INSERT INTO module_owners (namespace, hash) SELECT 'default', hash FROM modules;
`,
	// 23: namespace records (store.NamespaceStore): a namespace's
	// description, retention (ns; -1 = the server's default, 0 = keep
	// everything) and weight. Namespace default always exists.
	`
CREATE TABLE namespaces (
	name        TEXT PRIMARY KEY,
	description TEXT NOT NULL DEFAULT '',
	retention   INTEGER NOT NULL DEFAULT -1, -- ns; -1 = server default, 0 = forever
	weight      INTEGER NOT NULL DEFAULT 1,
	created_at  INTEGER NOT NULL,            -- unix ns
	updated_at  INTEGER NOT NULL
);
INSERT INTO namespaces (name, created_at, updated_at)
VALUES ('default', CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000000, CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000000);
`,
	// 24: API keys (store.KeyStore): the digest of each secret, never the
	// secret; looked up by digest on every authenticated request.
	`
CREATE TABLE api_keys (
	id           TEXT PRIMARY KEY,
	namespace    TEXT NOT NULL, -- '' for a root key
	role         TEXT NOT NULL,
	name         TEXT NOT NULL DEFAULT '',
	digest       TEXT NOT NULL UNIQUE, -- hex SHA-256 of the secret
	activities   TEXT NOT NULL DEFAULT '[]', -- JSON array of names
	created_at   INTEGER NOT NULL, -- unix ns
	expires_at   INTEGER NOT NULL DEFAULT 0, -- 0: never
	last_used_at INTEGER NOT NULL DEFAULT 0,
	revoked_at   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_namespace ON api_keys (namespace, created_at, id);
`,
}

// SchemaTooNewError is returned by Open when the database's schema version
// is newer than this build knows, i.e. it was written by a newer skein.
type SchemaTooNewError struct {
	Version   int // schema version found in the database
	Supported int // newest schema version this build knows
}

// Error implements error.
func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this build supports (%d); use a newer skein", e.Version, e.Supported)
}

// migrate applies every migration the database lacks, each in its own
// transaction together with the version bump.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	for {
		done, err := migrateOne(ctx, db, log)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next missing migration and reports whether none
// was missing. The version is read inside the (immediate) transaction, so
// two processes opening the same file do not both apply a migration.
func migrateOne(ctx context.Context, db *sql.DB, log *slog.Logger) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("migrate: read schema version: %w", err)
	}
	switch {
	case v > len(migrations):
		return false, fmt.Errorf("migrate: %w", &SchemaTooNewError{Version: v, Supported: len(migrations)})
	case v == len(migrations):
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migrate: apply migration %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("migrate: set schema version %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate: commit migration %d: %w", v+1, err)
	}
	log.Info("sqlite store: applied schema migration", "version", v+1)
	return false, nil
}
