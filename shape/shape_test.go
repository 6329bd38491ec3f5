package shape

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type Inner struct {
	Qty  int    `json:"qty"`
	Note string `json:"note,omitempty"`
}

type Embedded struct {
	Origin string `json:"origin"`
}

type Order struct {
	Embedded
	ID       string            `json:"id"`
	Amount   float64           `json:"amount"`
	Approved bool              `json:"approved"`
	Lines    []Inner           `json:"lines"`
	Tags     map[string]string `json:"tags,omitempty"`
	Next     *Order            `json:"next,omitempty"`
	When     time.Time         `json:"when"`
	Count    int64             `json:"count,string"`
	Any      any               `json:"any,omitempty"`
	Raw      json.RawMessage   `json:"raw,omitempty"`
	Bytes    []byte            `json:"bytes,omitempty"`
	secret   int
	Skipped  int `json:"-"`
	Untagged uint8
}

func TestOfOrder(t *testing.T) {
	got := string(Of(reflect.TypeFor[Order]()))
	want := `{"properties":{"Untagged":{"type":"integer"},"amount":{"type":"number"},"any":{},` +
		`"approved":{"type":"boolean"},"bytes":{"type":["string","null"]},"count":{"type":"string"},"id":{"type":"string"},` +
		`"lines":{"items":{"properties":{"note":{"type":"string"},"qty":{"type":"integer"}},"type":"object"},"type":["array","null"]},` +
		`"next":{},"origin":{"type":"string"},"raw":{},` +
		`"tags":{"additionalProperties":{"type":"string"},"type":["object","null"]},"when":{}},` +
		`"type":"object"}`
	if got != want {
		t.Fatalf("Of(Order) =\n%s\nwant\n%s", got, want)
	}
	if again := string(Of(reflect.TypeFor[Order]())); again != got {
		t.Fatalf("Of is not deterministic:\n%s\n%s", got, again)
	}
}

func TestOfScalars(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[int](), `{"type":"integer"}`},
		{reflect.TypeFor[string](), `{"type":"string"}`},
		{reflect.TypeFor[*bool](), `{"type":["boolean","null"]}`},
		{reflect.TypeFor[[2]float32](), `{"items":{"type":"number"},"type":"array"}`},
		{reflect.TypeFor[any](), `{}`},
		{nil, `{}`},
		{reflect.TypeFor[struct{}](), `{"properties":{},"type":"object"}`},
	} {
		if got := string(Of(c.t)); got != c.want {
			t.Errorf("Of(%v) = %s, want %s", c.t, got, c.want)
		}
	}
}

// Every value json.Marshal makes of a type has the type's shape.
func TestCheckAcceptsEncodedValues(t *testing.T) {
	s := Of(reflect.TypeFor[Order]())
	for _, v := range []Order{
		{},
		{ID: "a", Lines: []Inner{{Qty: 2, Note: "x"}}, Tags: map[string]string{"k": "v"}, Next: &Order{ID: "b"}, Any: []int{1}, Raw: json.RawMessage(`{"x":1}`), Bytes: []byte("hi")},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(s, b); err != nil {
			t.Errorf("Check(%s): %v", b, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	s := Of(reflect.TypeFor[Inner]())
	for _, c := range []struct{ value, want string }{
		{`{"qty":"3"}`, `at $.qty: want integer, got string "3"`},
		{`{"qty":1.5}`, `at $.qty: want integer, got number 1.5`},
		{`{"qty":1,"note":7}`, `at $.note: want string, got integer 7`},
		{`[1]`, `at $: want object, got array`},
		{`true`, `at $: want object, got boolean true`},
	} {
		err := Check(s, []byte(c.value))
		var me *MismatchError
		if !errors.As(err, &me) || err.Error() != c.want {
			t.Errorf("Check(%s) = %v, want %s", c.value, err, c.want)
		}
	}
	lines := Of(reflect.TypeFor[map[string][]Inner]())
	err := Check(lines, []byte(`{"a b":[{"qty":1},{"qty":null}]}`))
	if err == nil || err.Error() != `at $["a b"][1].qty: want integer, got null` {
		t.Errorf("nested: %v", err)
	}
	for _, ok := range []string{`null`, `{}`, `{"qty":1,"extra":[1]}`, ` {"qty": -3} `} {
		if err := Check(s, []byte(ok)); err != nil {
			t.Errorf("Check(%s): %v", ok, err)
		}
	}
	// "required" is checked when a schema has it (Of never emits it).
	req := []byte(`{"type":"object","required":["qty"]}`)
	if err := Check(req, []byte(`{"note":"x"}`)); err == nil || err.Error() != `at $: missing required property "qty"` {
		t.Errorf("required: %v", err)
	}
	if err := Check(nil, []byte(`"anything"`)); err != nil {
		t.Errorf("no schema: %v", err)
	}
	if err := Check(s, []byte(`{`)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("bad JSON: %v", err)
	}
}
