package postgres

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations is the ordered list of schema changes; migration i+1 is
// migrations[i]. The schema_migrations table records every version
// applied. Never edit or reorder an entry once released; append a new one.
//
// The tables mirror store/sqlite's: times are unix nanoseconds (BIGINT),
// JSON payloads are BYTEA, and every text column that is compared or
// sorted uses the "C" collation so that order is byte order, as in SQLite
// and the memory store.
var migrations = []string{
	// 1: initial schema (the state of store/sqlite after its migration 3).
	`
CREATE SEQUENCE modules_named_seq;
CREATE TABLE modules (
	hash        TEXT COLLATE "C" PRIMARY KEY,
	name        TEXT COLLATE "C" NOT NULL DEFAULT '',
	bytes       BYTEA NOT NULL,
	abi_version INTEGER NOT NULL,
	workflows   TEXT NOT NULL DEFAULT '[]', -- JSON array of names
	created_at  BIGINT NOT NULL,            -- unix ns
	named_seq   BIGINT NOT NULL DEFAULT 0,  -- order in which modules were last stored under their name
	ins_seq     BIGSERIAL NOT NULL          -- insertion order (SQLite's rowid)
);
CREATE INDEX modules_name ON modules (name, named_seq);

CREATE TABLE runs (
	id           TEXT COLLATE "C" PRIMARY KEY,
	module_hash  TEXT NOT NULL,
	workflow     TEXT NOT NULL,
	input        BYTEA,
	status       TEXT COLLATE "C" NOT NULL,
	result       BYTEA,
	error        TEXT NOT NULL DEFAULT '',
	seed         BIGINT NOT NULL,           -- uint64 stored as its int64 bit pattern
	parent       TEXT NOT NULL DEFAULT '',
	start_time   BIGINT NOT NULL DEFAULT 0, -- unix ns
	wake_at      BIGINT NOT NULL DEFAULT 0, -- unix ns; 0 = none
	deadline     BIGINT NOT NULL DEFAULT 0, -- unix ns; 0 = none
	cancel       TEXT NOT NULL DEFAULT '',  -- reason; '' = not requested
	lease_owner  TEXT NOT NULL DEFAULT '',  -- reserved for leases
	lease_expiry BIGINT NOT NULL DEFAULT 0, -- reserved for leases
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL
);
CREATE INDEX runs_status ON runs (status, id);
CREATE INDEX runs_status_wake ON runs (status, wake_at);

CREATE TABLE outcomes (
	run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT COLLATE "C" NOT NULL,
	kind       TEXT NOT NULL,
	function   TEXT NOT NULL,
	status     TEXT NOT NULL,
	value      BYTEA,
	error      TEXT NOT NULL DEFAULT '',
	attempts   BIGINT NOT NULL DEFAULT 0,
	seq        BIGINT NOT NULL DEFAULT 0,
	waited     BOOLEAN NOT NULL DEFAULT false,
	idle       BIGINT NOT NULL DEFAULT 0,
	wake_order BIGINT NOT NULL DEFAULT 0,
	vtime      BIGINT NOT NULL DEFAULT 0,
	deadline   BIGINT NOT NULL DEFAULT 0,
	orphaned   BOOLEAN NOT NULL DEFAULT false,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (run_id, key)
);
CREATE INDEX outcomes_seq ON outcomes (run_id, seq);

CREATE TABLE settlements (
	run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT COLLATE "C" NOT NULL,
	status     TEXT NOT NULL,
	value      BYTEA,
	error      TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	PRIMARY KEY (run_id, key)
);
`,
	// 2: worker leases (store/sqlite's migration 4): the token of a run's
	// latest claim, and the history of every claim.
	`
ALTER TABLE runs ADD COLUMN lease_token BIGINT NOT NULL DEFAULT 0; -- token of the latest claim; 0 = never claimed
CREATE TABLE leases (
	run_id      TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	token       BIGINT NOT NULL,
	owner       TEXT NOT NULL,
	claimed_at  BIGINT NOT NULL,           -- unix ns
	expiry      BIGINT NOT NULL,           -- unix ns; latest expiry (claim or renewal)
	released_at BIGINT NOT NULL DEFAULT 0, -- unix ns; 0 = not released
	PRIMARY KEY (run_id, token)
);
`,
	// 3: due runs found by index only (store/sqlite's migration 5):
	// runs.waiting is true while a settlement or a cancellation waits to
	// be delivered to a suspended run (kept by every write that can
	// change it); suspended runs past their deadline are found by
	// (status, deadline).
	`
ALTER TABLE runs ADD COLUMN waiting BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX runs_status_deadline ON runs (status, deadline);
CREATE INDEX runs_waiting ON runs (wake_at, id) WHERE waiting;
UPDATE runs SET waiting = (
	EXISTS (SELECT 1 FROM settlements s JOIN outcomes o ON o.run_id = s.run_id AND o.key = s.key
		WHERE s.run_id = runs.id AND o.status = 'pending')
	OR (cancel <> '' AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.run_id = runs.id AND o.key = '!cancel')))
WHERE status = 'suspended';
`,
	// 4: what is recorded is write-once (store/sqlite's migration 6; see
	// store.Batch): a settled outcome keeps its status, value, error, kind
	// and function; a completed or canceled run keeps its status, result,
	// error and module. The triggers raise SQLSTATE ` + writeOnceState + `.
	`
CREATE FUNCTION skein_outcome_write_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'run %: settled outcome % (%) cannot change', OLD.run_id, OLD.key, OLD.status
		USING ERRCODE = '` + writeOnceState + `';
END $$;
CREATE TRIGGER outcomes_write_once BEFORE UPDATE ON outcomes FOR EACH ROW
WHEN (OLD.status <> 'pending' AND (NEW.status IS DISTINCT FROM OLD.status
	OR coalesce(NEW.value, ''::bytea) IS DISTINCT FROM coalesce(OLD.value, ''::bytea)
	OR NEW.error IS DISTINCT FROM OLD.error OR NEW.kind IS DISTINCT FROM OLD.kind
	OR NEW.function IS DISTINCT FROM OLD.function))
EXECUTE FUNCTION skein_outcome_write_once();
CREATE FUNCTION skein_run_write_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'run % is %: its status, result, error and module cannot change', OLD.id, OLD.status
		USING ERRCODE = '` + writeOnceState + `';
END $$;
CREATE TRIGGER runs_write_once BEFORE UPDATE OF module_hash, status, result, error ON runs FOR EACH ROW
WHEN (OLD.status IN ('completed', 'canceled') AND (NEW.status IS DISTINCT FROM OLD.status
	OR coalesce(NEW.result, ''::bytea) IS DISTINCT FROM coalesce(OLD.result, ''::bytea)
	OR NEW.error IS DISTINCT FROM OLD.error OR NEW.module_hash IS DISTINCT FROM OLD.module_hash))
EXECUTE FUNCTION skein_run_write_once();
`,
	// 5: activity tasks for remote workers (store.TaskStore; store/sqlite's
	// migration 7), the fair-queueing clock of their claims, and the
	// attempts a task's settlement counts.
	`
ALTER TABLE settlements ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
CREATE TABLE tasks (
	seq        BIGSERIAL PRIMARY KEY,
	run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT COLLATE "C" NOT NULL,
	name       TEXT COLLATE "C" NOT NULL,
	input      BYTEA,
	options    BYTEA,
	timeout    BIGINT NOT NULL DEFAULT 0,  -- ns per attempt; 0 = none
	attempt    BIGINT NOT NULL,
	state      TEXT NOT NULL,              -- queued, claimed, done, canceled
	tag        BIGINT NOT NULL,            -- fair-queueing order of claims
	visible_at BIGINT NOT NULL,            -- unix ns
	owner      TEXT NOT NULL DEFAULT '',
	claimed_at BIGINT NOT NULL DEFAULT 0,
	heartbeat  BIGINT NOT NULL DEFAULT 0,
	expiry     BIGINT NOT NULL DEFAULT 0,
	progress   BYTEA,
	last_error TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL,
	UNIQUE (run_id, key)
);
CREATE INDEX tasks_queue ON tasks (name, tag, seq) WHERE state = 'queued';
CREATE INDEX tasks_leases ON tasks (expiry) WHERE state = 'claimed';
CREATE INDEX tasks_run_tag ON tasks (run_id, tag);
CREATE TABLE task_clock (id INTEGER PRIMARY KEY CHECK (id = 1), v BIGINT NOT NULL);
INSERT INTO task_clock (id, v) VALUES (1, 0);
`,
	// 6: the timeline (docs/ui.md; store/sqlite's migration 9): when each op was first issued and
	// when its settlement was recorded, and each attempt of an op (and
	// each instance drop, at key '!idle'), by the host's wall clock;
	// observability data, never replayed.
	`
ALTER TABLE outcomes ADD COLUMN started_at BIGINT NOT NULL DEFAULT 0; -- unix ns; 0 = not known
ALTER TABLE outcomes ADD COLUMN settled_at BIGINT NOT NULL DEFAULT 0; -- unix ns; 0 = pending or not known
CREATE TABLE attempts (
	run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key        TEXT COLLATE "C" NOT NULL,
	n          BIGINT NOT NULL,
	started_at BIGINT NOT NULL DEFAULT 0, -- unix ns; 0 = not known
	ended_at   BIGINT NOT NULL DEFAULT 0, -- unix ns; 0 = running or not known
	error      TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, key, n)
);
`,
	// 7: continue-as-new (store/sqlite's migration 10): a run that
	// continued (status 'continued') is write-once like a completed or
	// canceled one (store.RunStatus.Final).
	`
DROP TRIGGER runs_write_once ON runs;
CREATE TRIGGER runs_write_once BEFORE UPDATE OF module_hash, status, result, error ON runs FOR EACH ROW
WHEN (OLD.status IN ('completed', 'canceled', 'continued') AND (NEW.status IS DISTINCT FROM OLD.status
	OR coalesce(NEW.result, ''::bytea) IS DISTINCT FROM coalesce(OLD.result, ''::bytea)
	OR NEW.error IS DISTINCT FROM OLD.error OR NEW.module_hash IS DISTINCT FROM OLD.module_hash))
EXECUTE FUNCTION skein_run_write_once();
`,
	// 8: schedules and webhooks (store/sqlite's migration 11;
	// store.ScheduleStore): each row holds
	// its record as JSON; a schedule's version makes its updates
	// conditional.
	`
CREATE TABLE schedules (
	name       TEXT COLLATE "C" PRIMARY KEY,
	doc        BYTEA NOT NULL,   -- store.Schedule as JSON
	version    BIGINT NOT NULL,  -- bumped by each update
	created_at BIGINT NOT NULL   -- unix ns
);
CREATE TABLE hooks (
	name       TEXT COLLATE "C" PRIMARY KEY,
	doc        BYTEA NOT NULL,   -- store.Hook as JSON
	created_at BIGINT NOT NULL   -- unix ns
);
`,
	// 9: typed promises (store/sqlite's migration 12): the JSON Schema of a promise's value, and of each
	// workflow's input (a JSON object by workflow name); NULL for none.
	`
ALTER TABLE outcomes ADD COLUMN schema BYTEA;
ALTER TABLE modules ADD COLUMN input_schemas TEXT;
`,
	// 10: a module may carry several names (store/sqlite's migration
	// 13): a row is a name a module was stored under, with when it last
	// was; a name points at the module of its newest row.
	`
CREATE TABLE module_names (
	name TEXT COLLATE "C" NOT NULL,
	hash TEXT COLLATE "C" NOT NULL,
	seq  BIGINT NOT NULL, -- order in which modules were stored under names (modules_named_seq)
	PRIMARY KEY (name, hash)
);
CREATE INDEX module_names_seq ON module_names (name, seq);
CREATE INDEX module_names_hash ON module_names (hash, seq);
INSERT INTO module_names (name, hash, seq) SELECT name, hash, named_seq FROM modules WHERE name <> '';
DROP INDEX modules_name;
ALTER TABLE modules DROP COLUMN name;
ALTER TABLE modules DROP COLUMN named_seq;
`,
	// 11: the signatures of webhook deliveries accepted within their
	// hook's tolerance window (store/sqlite's migration 14).
	`
CREATE TABLE hook_deliveries (
	hook    TEXT COLLATE "C" NOT NULL,
	id      TEXT COLLATE "C" NOT NULL,
	expires BIGINT NOT NULL, -- unix ns
	PRIMARY KEY (hook, id)
);
CREATE INDEX hook_deliveries_expires ON hook_deliveries (expires);
`,
	// 12: what a parent's end does to a child run that has not ended
	// (store/sqlite's migration 15).
	`
ALTER TABLE runs ADD COLUMN parent_close TEXT NOT NULL DEFAULT ''; -- '' or 'cancel': canceled; 'abandon': left running
ALTER TABLE runs ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0; -- 1: its parent ended first and left it running
`,
	// 13: traces (store/sqlite's migration 16).
	`
ALTER TABLE runs ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''; -- '' = none given
ALTER TABLE tasks ADD COLUMN traceparent TEXT NOT NULL DEFAULT ''; -- '' = not traced
`,
	// 14: paused runs (store/sqlite's migration 17).
	`
ALTER TABLE runs ADD COLUMN paused_by TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN pause_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN paused_at BIGINT NOT NULL DEFAULT 0; -- unix ns; 0 = not paused
`,
	// 15: retention (store/sqlite's migration 18): a run's continue-as-new
	// chain (store.ChainRoot of its id), and the indexes that find ended
	// runs by end time, a run's children and the runs of a chain.
	`
ALTER TABLE runs ADD COLUMN chain TEXT COLLATE "C" GENERATED ALWAYS AS (regexp_replace(id, '~([2-9]|[1-9][0-9]{1,17})$', '')) STORED;
CREATE INDEX runs_chain ON runs (chain);
CREATE INDEX runs_parent ON runs (parent);
CREATE INDEX runs_ended ON runs (status, updated_at, id);
`,
	// 16: batch jobs (store/sqlite's migration 19, store.BatchJobStore): the
	// claim's columns, and the job's definition and progress as JSON (doc).
	`
CREATE TABLE batch_jobs (
	id           TEXT COLLATE "C" PRIMARY KEY,
	status       TEXT COLLATE "C" NOT NULL, -- running, done, canceled
	cancel       TEXT NOT NULL DEFAULT '',
	created_at   BIGINT NOT NULL, -- unix ns
	lease_owner  TEXT NOT NULL DEFAULT '',
	lease_expiry BIGINT NOT NULL DEFAULT 0,
	lease_token  BIGINT NOT NULL DEFAULT 0,
	doc          TEXT NOT NULL
);
CREATE INDEX batch_jobs_running ON batch_jobs (status, created_at, id);
CREATE INDEX batch_jobs_created ON batch_jobs (created_at, id);
`,
	// 17: search attributes (store/sqlite's migration 20, store.AttrStore):
	// the declarations, keyed by namespace (all 'default' until
	// namespaces exist) and name, and each run's values, one typed
	// column per kind of value (store.AttrColumn), indexed by (name,
	// value) for filters.
	`
CREATE TABLE attr_decls (
	namespace  TEXT COLLATE "C" NOT NULL DEFAULT 'default',
	name       TEXT COLLATE "C" NOT NULL,
	type       TEXT NOT NULL,    -- string, int, float, bool, time
	created_at BIGINT NOT NULL, -- unix ns
	PRIMARY KEY (namespace, name)
);
CREATE TABLE run_attrs (
	run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	name   TEXT COLLATE "C" NOT NULL,
	type   TEXT NOT NULL,
	v_text TEXT COLLATE "C", -- a string
	v_int  BIGINT, -- an int, a bool (0, 1), a time (unix ns)
	v_real DOUBLE PRECISION, -- a float
	PRIMARY KEY (run_id, name)
);
CREATE INDEX run_attrs_text ON run_attrs (name, v_text);
CREATE INDEX run_attrs_int ON run_attrs (name, v_int);
CREATE INDEX run_attrs_real ON run_attrs (name, v_real);
`,
	// 18: resets (store/sqlite's migration 21).
	`
ALTER TABLE runs ADD COLUMN reset_to TEXT NOT NULL DEFAULT '';   -- '' = not reset
ALTER TABLE runs ADD COLUMN reset_from TEXT NOT NULL DEFAULT ''; -- '' = not made by a reset
ALTER TABLE runs ADD COLUMN reset_key TEXT NOT NULL DEFAULT '';
DROP TRIGGER runs_write_once ON runs;
CREATE TRIGGER runs_write_once BEFORE UPDATE OF module_hash, status, result, error ON runs FOR EACH ROW
WHEN (OLD.status IN ('completed', 'canceled', 'continued', 'reset') AND (
	NEW.status IS DISTINCT FROM OLD.status AND NOT (NEW.status = 'reset' AND OLD.reset_to = '' AND NEW.reset_to <> '')
	OR coalesce(NEW.result, ''::bytea) IS DISTINCT FROM coalesce(OLD.result, ''::bytea)
	OR NEW.error IS DISTINCT FROM OLD.error OR NEW.module_hash IS DISTINCT FROM OLD.module_hash))
EXECUTE FUNCTION skein_run_write_once();
`,
	// 19: the checks of a commit made in SQL (checks.go): a commit is one
	// pipeline without BEGIN and COMMIT, so a check that fails must abort
	// it, raising checkState with the check's code as the message, its
	// subject (a run id) as the detail and what else Go needs (a status)
	// as the hint.
	`
CREATE FUNCTION skein_fail(code TEXT, subject TEXT, extra TEXT DEFAULT '') RETURNS BOOLEAN LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'SKC01', MESSAGE = code, DETAIL = subject, HINT = extra;
END $$;
`,
	// 20: namespaces own modules (store/sqlite's migration 22).
	`
CREATE TABLE module_owners (
	namespace TEXT COLLATE "C" NOT NULL,
	hash      TEXT COLLATE "C" NOT NULL,
	PRIMARY KEY (namespace, hash)
);
CREATE INDEX module_owners_hash ON module_owners (hash);
INSERT INTO module_owners (namespace, hash) SELECT 'default', hash FROM modules;
`,
	// 21: namespace records (store/sqlite's migration 23, store.NamespaceStore): a namespace's
	// description, retention (ns; -1 = the server's default, 0 = keep
	// everything) and weight. Namespace default always exists.
	`
CREATE TABLE namespaces (
	name        TEXT COLLATE "C" PRIMARY KEY,
	description TEXT NOT NULL DEFAULT '',
	retention   BIGINT NOT NULL DEFAULT -1, -- ns; -1 = server default, 0 = forever
	weight      INTEGER NOT NULL DEFAULT 1,
	created_at  BIGINT NOT NULL,            -- unix ns
	updated_at  BIGINT NOT NULL
);
INSERT INTO namespaces (name, created_at, updated_at)
VALUES ('default', (extract(epoch FROM clock_timestamp()) * 1000000000)::BIGINT, (extract(epoch FROM clock_timestamp()) * 1000000000)::BIGINT);
`,
	// 22: API keys (store/sqlite's migration 24, store.KeyStore).
	`
CREATE TABLE api_keys (
	id           TEXT COLLATE "C" PRIMARY KEY,
	namespace    TEXT COLLATE "C" NOT NULL, -- '' for a root key
	role         TEXT NOT NULL,
	name         TEXT NOT NULL DEFAULT '',
	digest       TEXT COLLATE "C" NOT NULL UNIQUE, -- hex SHA-256 of the secret
	activities   TEXT NOT NULL DEFAULT '[]', -- JSON array of names
	created_at   BIGINT NOT NULL, -- unix ns
	expires_at   BIGINT NOT NULL DEFAULT 0, -- 0: never
	last_used_at BIGINT NOT NULL DEFAULT 0,
	revoked_at   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_namespace ON api_keys (namespace, created_at, id);
`,
}

// writeOnceState is the SQLSTATE the write-once triggers raise (class SK:
// skein's own).
const writeOnceState = "SKW01"

// migrationLockClass is the first key of the transaction-scoped advisory
// lock taken while migrating; the second is a hash of the schema being
// migrated, so that schemas of one database migrate independently.
const migrationLockClass = 0x736b65 // "ske"

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

// migrate applies every migration the schema lacks, all in one
// transaction that first takes an advisory lock: two processes opening the
// same database at once apply each migration exactly once, the second
// waiting for the first and then finding nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))`, migrationLockClass); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`); err != nil {
			return fmt.Errorf("migrate: create schema_migrations: %w", err)
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
			return fmt.Errorf("migrate: read schema version: %w", err)
		}
		if v > len(migrations) {
			return fmt.Errorf("migrate: %w", &SchemaTooNewError{Version: v, Supported: len(migrations)})
		}
		for ; v < len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate: apply migration %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v+1); err != nil {
				return fmt.Errorf("migrate: record migration %d: %w", v+1, err)
			}
			log.Info("postgres store: applied schema migration", "version", v+1)
		}
		return nil
	})
}
