package storetest

import (
	"encoding/json"
	"testing"

	"github.com/skeinrun/skein/store"
)

// The typed-promise cases: a promise's schema and a module's input
// schemas are stored and read back.

func testPromiseSchema(t *testing.T, s store.Store) {
	mustCreateRun(t, s, testRun("run-1"))
	schema := []byte(`{"properties":{"ok":{"type":"boolean"}},"required":["ok"],"type":"object"}`)
	pending := store.Outcome{Key: "approve", Kind: "promise", Function: "promise", Status: store.OutcomePending, Schema: schema, UpdatedAt: ts(1)}
	plain := store.Outcome{Key: "other", Kind: "promise", Function: "promise", Status: store.OutcomePending, UpdatedAt: ts(1)}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", pending), ro("run-1", plain)}})
	check := func(when string, want map[string]string) {
		t.Helper()
		for _, o := range mustOutcomes(t, s, "run-1") {
			if got := string(o.Schema); got != want[o.Key] {
				t.Errorf("%s: outcome %s: Schema = %q, want %q", when, o.Key, got, want[o.Key])
			}
		}
	}
	check("pending", map[string]string{"approve": string(schema)})
	// The settlement is written without a schema: the stored one stays.
	settled := store.Outcome{Key: "approve", Kind: "promise", Function: "promise", Status: store.OutcomeOK,
		Value: []byte(`{"ok":true}`), Seq: 1, Waited: true, Idle: 1, VTime: 5, UpdatedAt: ts(2)}
	mustCommit(t, s, store.Batch{Outcomes: []store.RunOutcome{ro("run-1", settled)}})
	check("settled", map[string]string{"approve": string(schema)})
}

func testModuleInputSchemas(t *testing.T, s store.Store) {
	m := testModule("typed", 1)
	m.InputSchemas = map[string]json.RawMessage{"alpha": json.RawMessage(`{"type":"integer"}`)}
	mustPutModule(t, s, m)
	plain := testModule("plain", 2)
	mustPutModule(t, s, plain)
	got := mustModule(t, s, "typed")
	if len(got.InputSchemas) != 1 || string(got.InputSchemas["alpha"]) != `{"type":"integer"}` {
		t.Errorf("InputSchemas = %v, want alpha: {\"type\":\"integer\"}", got.InputSchemas)
	}
	if got := mustModule(t, s, "plain"); got.InputSchemas != nil {
		t.Errorf("a module stored without input schemas reads back with %v", got.InputSchemas)
	}
	ms, err := s.Modules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == "typed" && string(m.InputSchemas["alpha"]) != `{"type":"integer"}` {
			t.Errorf("Modules: typed has InputSchemas %v", m.InputSchemas)
		}
	}
}
