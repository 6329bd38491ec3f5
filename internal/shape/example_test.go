package shape_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/skeinrun/skein/internal/shape"
	"github.com/skeinrun/skein/internal/testing/shapegen"
)

// TestExampleDecodes: for random Go types, the value Example makes from
// the type's schema is accepted by Check and decodes into the type with
// encoding/json; and for the types a workflow's promise most often has,
// it is a plain value, not null.
func TestExampleDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	nulls := 0
	for i := range 400 {
		ty := shapegen.Type(r, 3)
		schema := shape.Of(ty)
		v := shape.Example(schema, r)
		if err := shape.Check(schema, v); err != nil {
			t.Fatalf("type %d %v: Example %s is refused by Check: %v\nschema %s", i, ty, v, err, schema)
		}
		if err := json.Unmarshal(v, reflect.New(ty).Interface()); err != nil {
			t.Fatalf("type %d %v: Example %s does not decode: %v\nschema %s", i, ty, v, err, schema)
		}
		if string(v) == "null" {
			nulls++
		}
	}
	if nulls > 40 {
		t.Errorf("%d of 400 examples are null; want plain values", nulls)
	}
	type decision struct {
		Approved bool   `json:"approved"`
		By       string `json:"by"`
		Level    uint8  `json:"level"`
	}
	seen := map[bool]bool{}
	for range 20 {
		v := shape.Example(shape.Of(reflect.TypeFor[decision]()), r)
		var d decision
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil || d.By == "" {
			t.Fatalf("Example of a decision: %s (%v); want every field set", v, err)
		}
		seen[d.Approved] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("20 examples of a decision were all approved=%v", seen[true])
	}
}
