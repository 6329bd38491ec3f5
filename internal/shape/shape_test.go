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
	//lint:ignore U1000 on purpose: an unexported field, which the schema leaves out
	secret   int
	Skipped  int `json:"-"`
	Untagged uint8
}

const (
	int64Schema = `{"format":"int64","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":["integer","null"]}`
	uint8Schema = `{"format":"uint8","maximum":255,"minimum":0,"type":["integer","null"]}`
	top         = `{"$schema":"https://json-schema.org/draft/2020-12/schema",`
)

func TestOfOrder(t *testing.T) {
	got := string(Of(reflect.TypeFor[Order]()))
	want := top + `"properties":{"Untagged":` + uint8Schema + `,"amount":{"format":"float64","type":["number","null"]},"any":{"format":"float64"},` +
		`"approved":{"type":["boolean","null"]},"bytes":{"contentEncoding":"base64","items":` + uint8Schema + `,"type":["string","array","null"]},` +
		`"count":{"type":["string","null"],"x-quoted":` + int64Schema + `},"id":{"type":["string","null"]},` +
		`"lines":{"items":{"properties":{"note":{"type":["string","null"]},"qty":` + int64Schema + `},"type":["object","null"],"x-caseFold":true},"type":["array","null"]},` +
		`"next":{"$ref":"#"},"origin":{"type":["string","null"]},"raw":{},` +
		`"tags":{"additionalProperties":{"type":["string","null"]},"type":["object","null"]},"when":{"format":"date-time","type":["string","null"]}},` +
		`"type":["object","null"],"x-caseFold":true}`
	if got != want {
		t.Fatalf("Of(Order) =\n%s\nwant\n%s", got, want)
	}
	if again := string(Of(reflect.TypeFor[Order]())); again != got {
		t.Fatalf("Of is not deterministic:\n%s\n%s", got, again)
	}
}

type (
	fold struct {
		A int    `json:"ab"`
		B string `json:"AB"`
	}
	tree struct {
		Kids []tree
	}
	forest struct {
		Trees map[string]*tree
	}
	hidden  struct{ X int }
	blocked struct {
		*hidden
		Y int
	}
)

func TestOfScalars(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[int](), top + strings.TrimPrefix(int64Schema, "{")},
		{reflect.TypeFor[int8](), top + `"format":"int8","maximum":127,"minimum":-128,"type":["integer","null"]}`},
		{reflect.TypeFor[uint64](), top + `"format":"uint64","maximum":18446744073709551615,"minimum":0,"type":["integer","null"]}`},
		{reflect.TypeFor[string](), top + `"type":["string","null"]}`},
		{reflect.TypeFor[*bool](), top + `"type":["boolean","null"]}`},
		{reflect.TypeFor[[2]float32](), top + `"items":{"format":"float32","type":["number","null"]},"type":["array","null"],"x-checkedItems":2}`},
		{reflect.TypeFor[any](), top + `"format":"float64"}`},
		{reflect.TypeFor[error](), top + `"type":"null"}`},
		{reflect.TypeFor[json.Number](), top + `"format":"json-number","type":["number","string","null"]}`},
		{reflect.TypeFor[map[int16]bool](), top + `"additionalProperties":{"type":["boolean","null"]},"propertyNames":{"format":"int16"},"type":["object","null"]}`},
		{reflect.TypeFor[map[float64]bool](), top + `"type":"null"}`},
		{reflect.TypeFor[chan int](), top + `"type":"null"}`},
		{nil, top[:len(top)-1] + `}`},
		{reflect.TypeFor[struct{}](), top + `"properties":{},"type":["object","null"]}`},
		{reflect.TypeFor[fold](), top + `"properties":{"AB":{"type":["string","null"]},"ab":` + int64Schema + `},"type":["object","null"],"x-caseFold":["ab","AB"]}`},
		{reflect.TypeFor[blocked](), top + `"properties":{"X":false,"Y":` + int64Schema + `},"type":["object","null"],"x-caseFold":true}`},
		{reflect.TypeFor[forest](), `{"$defs":{"shape.tree":{"properties":{"Kids":{"items":{"$ref":"#/$defs/shape.tree"},"type":["array","null"]}},"type":["object","null"],"x-caseFold":true}},` +
			top[1:] + `"properties":{"Trees":{"additionalProperties":{"$ref":"#/$defs/shape.tree"},"type":["object","null"]}},"type":["object","null"],"x-caseFold":true}`},
	} {
		if got := string(Of(c.t)); got != c.want {
			t.Errorf("Of(%v) =\n%s\nwant\n%s", c.t, got, c.want)
		}
	}
}

// Every value json.Marshal makes of a type has the type's shape.
func TestCheckAcceptsEncodedValues(t *testing.T) {
	s := Of(reflect.TypeFor[Order]())
	for _, v := range []Order{
		{},
		{ID: "a", Lines: []Inner{{Qty: 2, Note: "x"}}, Tags: map[string]string{"k": "v"}, Next: &Order{ID: "b", Count: -5}, Any: []int{1}, Raw: json.RawMessage(`{"x":1}`), Bytes: []byte("hi"), When: time.Now()},
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

// mismatch checks that Check refuses value with the message want.
func mismatch(t *testing.T, schema []byte, value, want string) {
	t.Helper()
	err := Check(schema, []byte(value))
	var me *MismatchError
	if !errors.As(err, &me) || err.Error() != want {
		t.Errorf("Check(%s) = %v\nwant %s", value, err, want)
	}
}

func accepts(t *testing.T, schema []byte, values ...string) {
	t.Helper()
	for _, v := range values {
		if err := Check(schema, []byte(v)); err != nil {
			t.Errorf("Check(%s): %v", v, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	s := Of(reflect.TypeFor[Inner]())
	mismatch(t, s, `{"qty":"3"}`, `at $.qty: want integer or null, got string "3"`)
	mismatch(t, s, `{"qty":1.5}`, `at $.qty: want integer or null, got number 1.5`)
	mismatch(t, s, `{"qty":1,"note":7}`, `at $.note: want string or null, got integer 7`)
	mismatch(t, s, `[1]`, `at $: want object or null, got array`)
	mismatch(t, s, `true`, `at $: want object or null, got boolean true`)
	lines := Of(reflect.TypeFor[map[string][]Inner]())
	mismatch(t, lines, `{"a b":[{"qty":1},{"qty":"x"}]}`, `at $["a b"][1].qty: want integer or null, got string "x"`)
	accepts(t, s, `null`, `{}`, `{"qty":1,"extra":[1]}`, ` {"qty": -3} `, `{"qty":null}`, `{"note":null}`)
	// "required" is checked when a schema has it (Of never emits it).
	req := []byte(`{"type":"object","required":["qty"]}`)
	mismatch(t, req, `{"note":"x"}`, `at $: missing required property "qty"`)
	if err := Check(nil, []byte(`"anything"`)); err != nil {
		t.Errorf("no schema: %v", err)
	}
	if err := Check(s, []byte(`{`)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("bad JSON: %v", err)
	}
}
