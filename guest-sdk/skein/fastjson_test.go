package skein

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// The fast paths must give exactly what encoding/json gives.
func TestEncodeFastMatchesJSON(t *testing.T) {
	vals := []any{0, 1, -1, 42, math.MaxInt, math.MinInt, int64(math.MinInt64), int32(math.MinInt32), uint(7), uint64(math.MaxUint64), uint32(9),
		true, false, "", "abc", "with space", "<tag>", "a&b", "quote\"", "back\\slash", "tab\t", "é", "\u2028", struct{}{}, nil}
	for _, v := range vals {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := encodeFast(v); ok && !bytes.Equal(got, want) {
			t.Errorf("encodeFast(%#v) = %s, json %s", v, got, want)
		}
	}
}

func TestDecodeFastMatchesJSON(t *testing.T) {
	inputs := []string{"0", "-0", "1", "-1", "01", "+1", "1.0", "1e2", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "2147483648", "-2147483649", "99999999999999999999999",
		"true", "false", "null", `"abc"`, `""`, `"a\"b"`, `"\u00e9"`, `"é"`, `"a\\b"`, "{}", `{"a":1}`, " 1", "1 ", "-", `"`, ""}
	for _, in := range inputs {
		check[int](t, in)
		check[int64](t, in)
		check[int32](t, in)
		check[bool](t, in)
		check[string](t, in)
		check[struct{}](t, in)
	}
}

func check[T any](t *testing.T, in string) {
	t.Helper()
	var fast, slow T
	ok := decodeFast(&fast, []byte(in))
	err := json.Unmarshal([]byte(in), &slow)
	if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
		t.Errorf("decodeFast(%q) into %T = %v, json: %v, %v", in, fast, fast, slow, err)
	}
}
