package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestOutcomesBlobs checks the blobs Outcomes returns: NULL stays nil, an
// empty value comes back nil (as the driver returns it), large and small values come back whole, and
// each value is its own: appending to one or writing into it changes no
// other outcome (they share buffers).
func TestOutcomesBlobs(t *testing.T) {
	d, _ := openFile(t, Options{})
	defer d.Close()
	ctx := context.Background()
	if _, _, err := d.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	const schema = `{"type":"string"}`
	big := bytes.Repeat([]byte("x"), slabSize)
	values := [][]byte{[]byte(`"a"`), []byte(`"bb"`), big, []byte(`"c"`)}
	var outs []store.RunOutcome
	for i := range 600 { // several shared buffers' worth
		v := values[i%len(values)]
		outs = append(outs, store.RunOutcome{RunID: "r", Outcome: store.Outcome{
			Key: fmt.Sprintf("k%03d", i), Kind: "step", Function: "f", Status: store.OutcomeOK,
			Value: v, Schema: []byte(schema), Seq: int64(i + 1), Attempts: 3, WakeOrder: 7}})
	}
	outs = append(outs,
		store.RunOutcome{RunID: "r", Outcome: store.Outcome{Key: "p", Kind: "promise", Function: "promise", Status: store.OutcomePending}},
		store.RunOutcome{RunID: "r", Outcome: store.Outcome{Key: "e", Kind: "step", Function: "f", Status: store.OutcomeOK, Value: []byte{}, Seq: 601}})
	if err := d.Commit(ctx, store.Batch{Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	got, err := d.Outcomes(ctx, "r")
	if err != nil || len(got) != 602 {
		t.Fatalf("Outcomes = %d outcomes, %v; want 602", len(got), err)
	}
	for i, o := range got[:600] {
		if want := values[i%len(values)]; !bytes.Equal(o.Value, want) || string(o.Schema) != schema || o.Attempts != 3 || o.WakeOrder != 7 {
			t.Fatalf("outcome %s: value %.20q schema %q attempts %d wake order %d; want %.20q, %q, 3, 7",
				o.Key, o.Value, o.Schema, o.Attempts, o.WakeOrder, want, schema)
		}
	}
	if e := got[600]; e.Key != "e" || e.Value != nil {
		t.Errorf("empty value: outcome %s value %#v; want nil", e.Key, e.Value)
	}
	if p := got[601]; p.Key != "p" || p.Value != nil || p.Schema != nil {
		t.Errorf("pending outcome %s: value %#v schema %#v; want nil (NULL)", p.Key, p.Value, p.Schema)
	}
	for i := range got {
		got[i].Value = append(got[i].Value, '!')
		got[i].Schema = append(got[i].Schema, '!')
	}
	for i, o := range got[:600] {
		if want := string(values[i%len(values)]) + "!"; string(o.Value) != want || string(o.Schema) != schema+"!" {
			t.Fatalf("after appending to each value and schema, %s has value %.20q schema %q; want %.20q, %q",
				o.Key, o.Value, o.Schema, want, schema+"!")
		}
	}
}

// TestOutcomesOrder checks that Outcomes returns a journal in the order
// of ORDER BY seq = 0, seq, key (SQLite's own order, read here for
// comparison), with ties on seq, pending outcomes and keys that differ
// in case, length and non-ASCII bytes.
func TestOutcomesOrder(t *testing.T) {
	d, _ := openFile(t, Options{})
	defer d.Close()
	ctx := context.Background()
	if _, _, err := d.CreateRun(ctx, store.Run{ID: "r", ModuleHash: "h", Workflow: "w"}); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		key string
		seq int64
	}{
		{"t1", 3}, {"zz", 0}, {"b", 2}, {"B", 2}, {"a.1", 2}, {"a", 2}, {"é", 0}, {"e", 0},
		{"neg", -1}, {"t0", 1}, {"x", 5}, {"A", 0}, {"w", 5}, {"ü", 5}, {"t9", 4},
	}
	var outs []store.RunOutcome
	for _, r := range rows {
		o := store.Outcome{Key: r.key, Kind: "step", Function: "f", Status: store.OutcomeOK, Seq: r.seq, Value: []byte(`1`)}
		if r.seq == 0 {
			o.Status, o.Value = store.OutcomePending, nil
		}
		outs = append(outs, store.RunOutcome{RunID: "r", Outcome: o})
	}
	if err := d.Commit(ctx, store.Batch{Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	var want []string
	q, err := d.rdb.QueryContext(ctx, `SELECT key FROM outcomes WHERE run_id = ? ORDER BY seq = 0, seq, key`, "r")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var k string
		if err := q.Scan(&k); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	if err := errors.Join(q.Err(), q.Close()); err != nil {
		t.Fatal(err)
	}
	got, err := d.Outcomes(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range got {
		keys = append(keys, o.Key)
	}
	if !slices.Equal(keys, want) || len(keys) != len(rows) {
		t.Errorf("Outcomes keys = %q\nwant (ORDER BY seq = 0, seq, key) %q", keys, want)
	}
}

// A full chunk of plain outcomes goes through upsertPlainSQL, which binds
// only the columns such rows set; its rows, inserted and upserted over
// pending ones, are the ones the general statement writes for the same
// outcomes (here in chunks of 16, which take the general statement).
func TestPlainUpsertMatchesGeneral(t *testing.T) {
	d, _ := openFile(t, Options{})
	defer d.Close()
	ctx := context.Background()
	pending := func(run string) []store.RunOutcome {
		outs := outcomes(run, "p", 0, outcomeChunk)
		for i := range outs {
			o := &outs[i].Outcome
			o.Status, o.Value, o.Seq, o.VTime = store.OutcomePending, nil, 0, 0
			o.Deadline, o.Attempts, o.StartedAt, o.Schema = 99, 2, 7, []byte(`{"type":"number"}`)
		}
		return outs
	}
	settled := func(run string) []store.RunOutcome {
		outs := append(outcomes(run, "p", 0, outcomeChunk/2), outcomes(run, "q", outcomeChunk/2, outcomeChunk/2)...)
		for i := range outs {
			outs[i].Outcome.SettledAt = 11
		}
		return outs
	}
	if !allPlain(settled("a")) || allPlain(pending("a")) {
		t.Fatal("allPlain: the settled outcomes are plain, the pending ones (a deadline, a schema) are not")
	}
	for run, chunks := range map[string]int{"a": outcomeChunk, "b": outcomeChunk / 2} {
		if _, _, err := d.CreateRun(ctx, store.Run{ID: run, ModuleHash: "h", Workflow: "w"}); err != nil {
			t.Fatal(err)
		}
		for _, outs := range [][]store.RunOutcome{pending(run), settled(run)} {
			for len(outs) > 0 {
				if err := d.Commit(ctx, store.Batch{Outcomes: outs[:chunks]}); err != nil {
					t.Fatal(err)
				}
				outs = outs[chunks:]
			}
		}
	}
	a, err := d.Outcomes(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Outcomes(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != outcomeChunk*3/2 || len(a) != len(b) {
		t.Fatalf("%d and %d outcomes, want %d each", len(a), len(b), outcomeChunk*3/2)
	}
	for i := range a {
		a[i].UpdatedAt, b[i].UpdatedAt = time.Time{}, time.Time{}
		a[i].VTime, b[i].VTime = 0, 0 // outcomes() stamps the time it ran
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Errorf("outcome %d: plain %+v, general %+v", i, a[i], b[i])
		}
	}
	if o := a[0]; o.Status != store.OutcomeOK || o.Attempts != 2 || o.StartedAt != 7 || o.SettledAt != 11 || o.Deadline != 0 || string(o.Schema) != `{"type":"number"}` {
		t.Errorf("an upserted outcome: %+v", o)
	}
}
