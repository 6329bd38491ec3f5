package rowscan

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinrun/skein/store"
)

// Query runs a statement with args and calls row for each row it returns
// (a backend's query on its transaction or pool).
type Query func(q string, args []any, row func(Scanner) error) error

// errNever is the "no rows" error of scans of rows a query returned.
var errNever = errors.New("never returned")

// terminalIn is the SQL list of the terminal statuses: "('completed', ...)".
func terminalIn() string {
	var ts []string
	for _, s := range store.TerminalStatuses() {
		ts = append(ts, "'"+string(s)+"'")
	}
	return "(" + strings.Join(ts, ", ") + ")"
}

// pruneCandidatesSQL selects the runs of one terminal status that may be
// pruned at a horizon (store.PruneStore's rules), by end time then id,
// with the size of their chain. Its parameters: the status, the horizon
// (twice), the limit, the kept chains, then the bounds of the ids of
// namespace ns when it is neither empty (all) nor default (ids without
// '/'; pruneBounds). The runs' chain column is store.ChainRoot of their
// id.
func pruneCandidatesSQL(mark string, kept int, ns string) string {
	t := terminalIn()
	notKept := ""
	if kept > 0 {
		ms := make([]string, kept)
		for i := range ms {
			ms[i] = mark + strconv.Itoa(5+i)
		}
		notKept = "\nAND r.chain NOT IN (" + strings.Join(ms, ", ") + ")"
	}
	switch {
	case ns == store.DefaultNamespace && mark == "$":
		notKept += "\nAND strpos(r.id, '/') = 0"
	case ns == store.DefaultNamespace:
		notKept += "\nAND instr(r.id, '/') = 0"
	case ns != "":
		notKept += "\nAND r.id >= " + mark + strconv.Itoa(5+kept) + " AND r.id < " + mark + strconv.Itoa(6+kept)
	}
	return `SELECT r.id, r.chain, (SELECT count(*) FROM runs n WHERE n.chain = r.chain) FROM runs r
WHERE r.status = ` + mark + `1 AND r.updated_at < ` + mark + `2
AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.chain = r.chain AND (c.status NOT IN ` + t + ` OR c.updated_at >= ` + mark + `3))
AND NOT EXISTS (SELECT 1 FROM runs l JOIN runs k ON k.parent = l.id WHERE l.chain = r.chain AND k.status NOT IN ` + t + `)
AND NOT EXISTS (SELECT 1 FROM runs l JOIN runs p ON p.id = l.parent WHERE l.chain = r.chain AND l.parent <> '' AND p.status NOT IN ` + t + `)
` + notKept + `
ORDER BY r.updated_at, r.id LIMIT ` + mark + `4`
}

// slotRuns is store.SlotRuns of the stored schedules.
func slotRuns(query Query) (map[string]string, error) {
	var scheds []store.Schedule
	err := query(`SELECT doc FROM schedules`, nil, func(s Scanner) error {
		var doc []byte
		var sc store.Schedule
		if err := s.Scan(&doc); err != nil {
			return err
		}
		if err := json.Unmarshal(doc, &sc); err != nil {
			return fmt.Errorf("read a schedule: %w", err)
		}
		scheds = append(scheds, sc)
		return nil
	})
	return store.SlotRuns(scheds), err
}

// PrunePlan finds the batch of store.PruneStore.PruneRuns at before
// (store.PlanPrune) of namespace ns ("": all) with query; mark is the
// parameter prefix, "?" or "$". The caller deletes the runs (or, for a
// dry run, does not).
func PrunePlan(query Query, mark, ns string, before int64, limit int) (store.PruneResult, error) {
	type cand struct {
		id, chain string
		size      int64
	}
	var cands []cand
	slots, err := slotRuns(query)
	if err != nil {
		return store.PruneResult{}, err
	}
	kept := slices.Sorted(maps.Keys(slots))
	candSQL := pruneCandidatesSQL(mark, len(kept), ns)
	for _, st := range store.TerminalStatuses() {
		n := int64(math.MaxInt64)
		if limit > 0 {
			n = int64(limit - len(cands))
		}
		if n <= 0 {
			break
		}
		args := []any{string(st), before, before, n}
		for _, id := range kept {
			args = append(args, id)
		}
		if p := store.NamespacePrefix(ns); p != "" {
			args = append(args, p, store.PrefixEnd(p))
		}
		err := query(candSQL, args, func(s Scanner) error {
			var c cand
			if err := s.Scan(&c.id, &c.chain, &c.size); err != nil {
				return err
			}
			cands = append(cands, c)
			return nil
		})
		if err != nil {
			return store.PruneResult{}, err
		}
	}
	seen := map[string]bool{}
	units := make([][]string, 0, len(cands))
	for _, c := range cands {
		if seen[c.chain] {
			continue
		}
		seen[c.chain] = true
		if c.size == 1 {
			units = append(units, []string{c.id})
			continue
		}
		var ids []string
		err := query(`SELECT id FROM runs WHERE chain = `+mark+`1 ORDER BY id`, []any{c.chain}, func(s Scanner) error {
			var id string
			err := s.Scan(&id)
			ids = append(ids, id)
			return err
		})
		if err != nil {
			return store.PruneResult{}, err
		}
		units = append(units, ids)
	}
	return store.PlanPrune(len(cands), limit, units), nil
}

// DeleteRefusal reads with query what the rules of store.PruneStore's
// DeleteRun need of run id and returns why it is kept (a
// *store.KeptError), store.ErrNotFound for an unknown run, or nil when
// it may be deleted.
func DeleteRefusal(query Query, mark, id string) error {
	one := func(q string, arg string) (*store.Run, error) {
		var r *store.Run
		err := query(q, []any{arg}, func(s Scanner) error {
			run, err := Run(s, errNever)
			r = &run
			return err
		})
		return r, err
	}
	r, err := one(`SELECT `+RunColumns+` FROM runs WHERE id = `+mark+`1`, id)
	if err != nil {
		return err
	}
	if r == nil {
		return store.ErrNotFound
	}
	var rel store.Relatives
	if r.Parent != "" {
		if rel.Parent, err = one(`SELECT `+RunColumns+` FROM runs WHERE id = `+mark+`1`, r.Parent); err != nil {
			return err
		}
	}
	err = query(`SELECT id FROM runs WHERE parent = `+mark+`1 AND status NOT IN `+terminalIn()+` ORDER BY id LIMIT 1`,
		[]any{id}, func(s Scanner) error { return s.Scan(&rel.LiveChild) })
	if err != nil {
		return err
	}
	var chain []store.Run
	err = query(`SELECT `+RunColumns+` FROM runs WHERE chain = `+mark+`1`, []any{store.ChainRoot(id)}, func(s Scanner) error {
		run, err := Run(s, errNever)
		chain = append(chain, run)
		return err
	})
	if err != nil {
		return err
	}
	if len(chain) == 0 {
		chain = []store.Run{*r}
	}
	rel.ChainEnd = store.ChainEnd(chain)
	slots, err := slotRuns(query)
	if err != nil {
		return err
	}
	rel.SlotOf = slots[store.ChainRoot(id)]
	return store.KeepReason(*r, rel)
}
