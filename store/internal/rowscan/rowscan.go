// Package rowscan turns the rows of the SQL backends (store/sqlite,
// store/postgres) into store values. The two share their table layout,
// so one column list and one conversion serve both; each passes its
// driver's row and its "no rows" error. RunsQuery is their one query of
// the runs list.
package rowscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skeinrun/skein/store"
)

// Scanner is a row: *sql.Row, *sql.Rows, pgx.Row, pgx.Rows.
type Scanner interface {
	Scan(dest ...any) error
}

// RunColumns are the columns of runs that Run reads, in order.
const RunColumns = `id, module_hash, workflow, input, status, result, error, seed, parent, start_time, wake_at, deadline, cancel, created_at, updated_at, lease_owner, lease_expiry, lease_token, parent_close, abandoned, traceparent, paused_by, pause_reason, paused_at, reset_to, reset_from, reset_key`

// Run reads a row of RunColumns. A missing row (an error that is noRows)
// is store.ErrNotFound.
func Run(s Scanner, noRows error) (store.Run, error) {
	var r store.Run
	var status string
	var parentClose string
	var seed, created, updated, abandoned int64
	err := s.Scan(&r.ID, &r.ModuleHash, &r.Workflow, &r.Input, &status, &r.Result, &r.Error,
		&seed, &r.Parent, &r.StartTime, &r.WakeAt, &r.Deadline, &r.Cancel, &created, &updated,
		&r.LeaseOwner, &r.LeaseExpiry, &r.LeaseToken, &parentClose, &abandoned, &r.TraceParent,
		&r.Paused.By, &r.Paused.Reason, &r.Paused.At,
		&r.ResetTo, &r.ResetFrom, &r.ResetKey)
	if errors.Is(err, noRows) {
		return store.Run{}, store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, err
	}
	r.Status = store.RunStatus(status)
	r.ParentClose, r.Abandoned = store.ParentClose(parentClose), abandoned != 0
	r.Seed = uint64(seed)
	r.CreatedAt = time.Unix(0, created)
	r.UpdatedAt = time.Unix(0, updated)
	return r, nil
}

// Int is a flag as an INTEGER column holds it: 1 or 0.
func Int(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ModuleColumns returns the columns of modules (the table, as in
// store/postgres) that Module reads, in order, with or without the
// module's bytes: the names it was stored under as a JSON array of
// [name, whether it still points at it], the last stored first
// (module_names), then the record.
func ModuleColumns(withBytes bool) string {
	const names = `hash, (SELECT COALESCE(json_agg(json_build_array(n.name, n.seq = (SELECT MAX(o.seq) FROM module_names o WHERE o.name = n.name)) ORDER BY n.seq DESC), '[]')::text
	FROM module_names n WHERE n.hash = modules.hash), (SELECT COALESCE(json_agg(namespace ORDER BY namespace), '[]')::text FROM module_owners WHERE hash = modules.hash), `
	if withBytes {
		return names + `length(bytes), bytes, abi_version, workflows, created_at, input_schemas`
	}
	return names + `length(bytes), abi_version, workflows, created_at, input_schemas`
}

// InputSchemas encodes a module's input schemas for its input_schemas
// column: nil (NULL) when it has none.
func InputSchemas(m map[string]json.RawMessage) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// NullBytes is b as a column value: NULL when empty.
func NullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Module reads a row of ModuleColumns(withBytes). A missing row (an
// error that is noRows) is store.ErrNotFound.
func Module(s Scanner, withBytes bool, noRows error) (store.Module, error) {
	var m store.Module
	var names, owners, workflows string
	var created int64
	var schemas *string
	dest := []any{&m.Hash, &names, &owners, &m.Size, &m.ABIVersion, &workflows, &created, &schemas}
	if withBytes {
		dest = []any{&m.Hash, &names, &owners, &m.Size, &m.Bytes, &m.ABIVersion, &workflows, &created, &schemas}
	}
	err := s.Scan(dest...)
	if errors.Is(err, noRows) {
		return store.Module{}, store.ErrNotFound
	}
	if err != nil {
		return store.Module{}, err
	}
	if err := moduleNames(&m, names); err != nil {
		return store.Module{}, err
	}
	if err := json.Unmarshal([]byte(owners), &m.Namespaces); err != nil {
		return store.Module{}, fmt.Errorf("module %s: decode namespaces: %w", m.Hash, err)
	}
	if len(m.Namespaces) == 0 {
		m.Namespaces = nil
	}
	if err := json.Unmarshal([]byte(workflows), &m.Workflows); err != nil {
		return store.Module{}, fmt.Errorf("module %s: decode workflows: %w", m.Hash, err)
	}
	if len(m.Workflows) == 0 {
		m.Workflows = nil
	}
	if schemas != nil && *schemas != "" {
		if err := json.Unmarshal([]byte(*schemas), &m.InputSchemas); err != nil {
			return store.Module{}, fmt.Errorf("module %s: decode input schemas: %w", m.Hash, err)
		}
	}
	m.CreatedAt = time.Unix(0, created)
	return m, nil
}

// moduleNames sets m's names from the names column of ModuleColumns.
func moduleNames(m *store.Module, col string) error {
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal([]byte(col), &pairs); err != nil {
		return fmt.Errorf("module %s: decode names: %w", m.Hash, err)
	}
	for _, p := range pairs {
		var name string
		if err := json.Unmarshal(p[0], &name); err != nil {
			return fmt.Errorf("module %s: decode names: %w", m.Hash, err)
		}
		m.DeployedNames = append(m.DeployedNames, name)
		if current := string(p[1]); current == "1" || current == "true" { // SQLite, Postgres
			if m.Name == "" {
				m.Name = name // the newest
			}
			m.Names = append(m.Names, name)
		}
	}
	slices.Sort(m.Names)
	slices.Sort(m.DeployedNames)
	return nil
}
