package shape

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// The values issue 32 quotes, which the check accepted and the guest's
// decode refused (or the other way round for a null field).
func TestCheckIssueValues(t *testing.T) {
	i := Of(reflect.TypeFor[int]())
	mismatch(t, i, `9223372036854775808`, `at $: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 9223372036854775808`)
	accepts(t, i, `9223372036854775807`, `-9223372036854775808`, `-0`, `null`)
	n := Of(reflect.TypeFor[struct {
		N int `json:"n"`
	}]())
	mismatch(t, n, `{"n":100000000000000000000}`, `at $.n: want integer in int64 range [-9223372036854775808, 9223372036854775807], got integer 100000000000000000000`)
	d := Of(reflect.TypeFor[decision]())
	mismatch(t, d, `{"by":1,"by":"x"}`, `at $.by: want string or null, got integer 1`)
	mismatch(t, d, `{"by":"x","by":1}`, `at $.by: want string or null, got integer 1`)
	mismatch(t, d, `{"BY":1}`, `at $.BY: want string or null, got integer 1 (Go decodes key "BY" into property "by", ignoring case)`)
	mismatch(t, d, `{"Approved":"yes"}`, `at $.Approved: want boolean or null, got string "yes" (Go decodes key "Approved" into property "approved", ignoring case)`)
	accepts(t, d, `{"approved":null}`, `{"approved":null,"by":null}`, `{"BY":"ana","Approved":true}`, `{"by":"x","by":"y"}`)
}

func TestCheckIntegers(t *testing.T) {
	u8 := Of(reflect.TypeFor[uint8]())
	mismatch(t, u8, `256`, `at $: want integer in uint8 range [0, 255], got integer 256`)
	mismatch(t, u8, `-1`, `at $: want integer in uint8 range [0, 255], got integer -1`)
	mismatch(t, u8, `-0`, `at $: want integer in uint8 range [0, 255], got integer -0`) // strconv.ParseUint refuses a sign
	mismatch(t, u8, `1e2`, `at $: want integer or null, got number 1e2`)
	accepts(t, u8, `0`, `255`)
	u64 := Of(reflect.TypeFor[uint64]())
	accepts(t, u64, `18446744073709551615`)
	mismatch(t, u64, `18446744073709551616`, `at $: want integer in uint64 range [0, 18446744073709551615], got integer 18446744073709551616`)
	// minimum and maximum alone (another SDK's schema) compare exactly.
	b := []byte(`{"$schema":"x","type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807}`)
	mismatch(t, b, `9223372036854775808`, `at $: want a number in [-9223372036854775808, 9223372036854775807], got integer 9223372036854775808`)
	mismatch(t, b, `-9223372036854775809`, `at $: want a number in [-9223372036854775808, 9223372036854775807], got integer -9223372036854775809`)
	accepts(t, b, `9223372036854775807`, `-9223372036854775808`)
	f := []byte(`{"$schema":"x","type":"number","minimum":0.5,"maximum":1e2}`)
	accepts(t, f, `0.5`, `5e-1`, `100`, `1E2`, `0.50000`)
	mismatch(t, f, `0.49999999999999999999`, `at $: want a number in [0.5, 1e2], got number 0.49999999999999999999`)
	mismatch(t, f, `100.00000000000000001`, `at $: want a number in [0.5, 1e2], got number 100.00000000000000001`)
	mismatch(t, f, `-1e99999999999999999999`, `at $: want a number in [0.5, 1e2], got number -1e99999999999999999999`)
}

func TestCheckFloats(t *testing.T) {
	f32 := Of(reflect.TypeFor[float32]())
	accepts(t, f32, `3.4028234663852886e38`, `3.4028235677973366e38`, `1e-46`, `-0`)
	mismatch(t, f32, `3.4028235677973367e38`, `at $: want number in float32 range [-3.4028235e+38, 3.4028235e+38], got number 3.4028235677973367e38`)
	f64 := Of(reflect.TypeFor[[]float64]())
	mismatch(t, f64, `[1,1e309]`, `at $[1]: want number in float64 range [-1.7976931348623157e+308, 1.7976931348623157e+308], got number 1e309`)
	// An empty interface holds numbers as float64s, however deep.
	a := Of(reflect.TypeFor[map[string]any]())
	mismatch(t, a, `{"x":{"y":[true,-1e400]}}`, `at $.x.y[1]: want number in float64 range [-1.7976931348623157e+308, 1.7976931348623157e+308], got number -1e400`)
	accepts(t, a, `{"x":{"y":[true,1e308,"1e400"]}}`)
	// A struct's unknown members are skipped, not decoded: no range.
	accepts(t, Of(reflect.TypeFor[decision]()), `{"other":1e400}`)
}

type keys struct {
	K int
	S string
	A bool `json:"ab"`
	B bool `json:"AB"`
	C int  `json:"aB"`
}

func TestCheckKeyFolding(t *testing.T) {
	s := Of(reflect.TypeFor[keys]())
	// An exact match first, then the first field (in declaration order)
	// whose name folds alike: "Ab" is A's, not B's or C's.
	accepts(t, s, `{"ab":true,"AB":false,"aB":1,"Ab":false}`, `{"\u212a":1,"k":2,"\u017f":"x"}`)
	mismatch(t, s, `{"Ab":1}`, `at $.Ab: want boolean or null, got integer 1 (Go decodes key "Ab" into property "ab", ignoring case)`)
	mismatch(t, s, `{"\u212a":"x"}`, "at $[\"\u212a\"]: want integer or null, got string \"x\" (Go decodes key \"\u212a\" into property \"K\", ignoring case)")
	// Keys are unescaped before they are matched.
	mismatch(t, s, `{"\u0053":1}`, `at $.S: want string or null, got integer 1`)
}

type quoted struct {
	I int     `json:",string"`
	U *uint8  `json:",string"`
	F float32 `json:",string"`
	B bool    `json:",string"`
	S string  `json:",string"`
}

func TestCheckQuoted(t *testing.T) {
	s := Of(reflect.TypeFor[quoted]())
	accepts(t, s, `{"I":"-5","U":"007","F":"0x1p3","B":"true","S":"\"x\""}`, `{"I":"null","U":null,"F":"-Inf","S":"null"}`)
	const q = "in the string (the field is tagged ,string): "
	mismatch(t, s, `{"I":5}`, `at $.I: want string or null, got integer 5`)
	mismatch(t, s, `{"I":"1e3"}`, `at $.I: `+q+`want integer or null, got number 1e3`)
	mismatch(t, s, `{"I":" 1"}`, `at $.I: `+q+`want a literal (null, true, false, a number or a JSON string), got " 1"`)
	mismatch(t, s, `{"U":"-0"}`, `at $.U: `+q+`want integer in uint8 range [0, 255], got integer -0`)
	mismatch(t, s, `{"B":"1"}`, `at $.B: `+q+`want boolean or null, got integer 1`)
	mismatch(t, s, `{"S":"x"}`, `at $.S: `+q+`want a literal (null, true, false, a number or a JSON string), got "x"`)
	mismatch(t, s, `{"S":"\"x"}`, `at $.S: `+q+`want a literal (null, true, false, a number or a JSON string), got "\"x"`)
	mismatch(t, s, `{"S":""}`, `at $.S: `+q+`want a literal, got ""`)
}

type odds struct {
	Data  []byte
	Pair  [2]int8
	Ints  map[int8]string
	When  time.Time
	Times map[time.Time]int
	Iface error
	Fn    func()
	blocked
}

func TestCheckOdds(t *testing.T) {
	s := Of(reflect.TypeFor[odds]())
	accepts(t, s, `{"Data":"aGk=","Pair":[1,2,"past the length: skipped"],"Ints":{"-128":"x","+5":"y","007":"z"}}`,
		`{"Data":"aG\nk=","When":"2024-01-02T03:04:05Z","Times":{"2024-01-02T03:04:05+02:00":1}}`,
		`{"Data":[104,105],"Iface":null,"Fn":null}`)
	mismatch(t, s, `{"Data":"aGk"}`, `at $.Data: want base64 (contentEncoding base64: the standard alphabet, padded), got string "aGk"`)
	mismatch(t, s, `{"Data":[256]}`, `at $.Data[0]: want integer in uint8 range [0, 255], got integer 256`)
	mismatch(t, s, `{"Pair":[1,128]}`, `at $.Pair[1]: want integer in int8 range [-128, 127], got integer 128`)
	mismatch(t, s, `{"Ints":{"128":"x"}}`, `at $.Ints.128: property name: want integer in int8 range [-128, 127], got string "128"`)
	mismatch(t, s, `{"When":"2024-01-02"}`, `at $.When: want an RFC 3339 date-time (as Go's time.Time decodes it), got string "2024-01-02"`)
	mismatch(t, s, `{"When":"\u0032024-01-02T03:04:05Z"}`, `at $.When: want an RFC 3339 date-time (as Go's time.Time decodes it), got string "2024-01-02T03:04:05Z"`)
	mismatch(t, s, `{"Times":{"x":1}}`, `at $.Times.x: property name: want an RFC 3339 date-time (as Go's time.Time decodes it), got string "x"`)
	mismatch(t, s, `{"Iface":{}}`, `at $.Iface: want null, got object`)
	mismatch(t, s, `{"X":null}`, `at $.X: want no value (the schema is false: the decode fails on any value here)`)
}

// A schema from an older Of (no "$schema") checks as before: null at the
// top is accepted, keys match exactly, an array's every element is
// checked. Each occurrence of a repeated key is checked, as the module's
// decode (encoding/json) decodes each.
func TestCheckOldSchemas(t *testing.T) {
	old := []byte(`{"properties":{"approved":{"type":"boolean"},"by":{"type":"string"}},"type":"object"}`)
	accepts(t, old, `null`, `{"Approved":"yes"}`, `{"by":"x"}`)
	mismatch(t, old, `{"approved":null}`, `at $.approved: want boolean, got null`)
	mismatch(t, old, `{"by":1,"by":"x"}`, `at $.by: want string, got integer 1`)
	accepts(t, []byte(`{"type":"integer"}`), `100000000000000000000`, `null`)
	mismatch(t, []byte(`{"items":{"type":"integer"},"type":"array"}`), `[1,"x"]`, `at $[1]: want integer, got string "x"`)
}

// A schema that cannot be checked is an error, not a mismatch (the host
// then checks nothing, as for a module that gives none).
func TestCheckBadSchemas(t *testing.T) {
	for schema, want := range map[string]string{
		`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`: "refers to itself",
		`{"$ref":"#/$defs/b"}`:  "no such entry",
		`{"$ref":"http://x/y"}`: "only",
		`{"minimum":"x"}`:       "the schema is not valid",
		`{"minimum":"12a"}`:     "the schema is not valid",
		`{"x-caseFold":7}`:      "x-caseFold",
		`[1]`:                   "the schema is not valid",
	} {
		err := Check([]byte(schema), []byte(`1`))
		if _, ok := err.(*MismatchError); ok || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check with %s: %v, want an error saying %q", schema, err, want)
		}
	}
	accepts(t, []byte(`{"type":"array","items":{"$ref":"#"}}`), `[[],[[]]]`)
	mismatch(t, []byte(`{"type":"array","items":{"$ref":"#"}}`), `[[],[[1]]]`, `at $[1][0][0]: want array, got integer 1`)
	accepts(t, []byte(`true`), `{"x":1}`)
	mismatch(t, []byte(`false`), `1`, `at $: want no value (the schema is false: the decode fails on any value here)`)
}

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"0", "-0", 0}, {"0.0", "0e5", 0}, {"1", "1.0", 0}, {"100", "1e2", 0}, {"0.5", "5e-1", 0},
		{"9223372036854775808", "9223372036854775807", 1}, {"-9223372036854775809", "-9223372036854775808", -1},
		{"1e-400", "0", 1}, {"-1e-400", "0", -1}, {"123.45", "123.4500001", -1}, {"12", "120e-1", 0},
		{"1e99999999999999999999", "1e1000000", 1}, {"007", "7", 0},
	} {
		a, okA := parseDecimal(c.a)
		b, okB := parseDecimal(c.b)
		if !okA || !okB || a.cmp(b) != c.want || b.cmp(a) != -c.want {
			t.Errorf("cmp(%s, %s) = %d (parsed %v %v), want %d", c.a, c.b, a.cmp(b), okA, okB, c.want)
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1e", "1e+", "0x10", "1_0", "--1"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("parseDecimal(%q) ok", bad)
		}
	}
}
