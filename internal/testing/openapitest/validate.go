package openapitest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Exchange is one HTTP request and its answer, as sent and received.
type Exchange struct {
	Method     string
	URL        *url.URL // its path and query
	ReqHeader  http.Header
	ReqBody    []byte
	Status     int
	RespHeader http.Header
	RespBody   []byte
}

// String names the exchange in messages.
func (x Exchange) String() string {
	return fmt.Sprintf("%s %s -> %d", x.Method, x.URL.RequestURI(), x.Status)
}

// Match returns the operation ("METHOD /path/{param}") a request is
// for: the one whose path template matches path, a literal segment
// winning over a parameter, as net/http's ServeMux decides.
func (d *Doc) Match(method, path string) (string, error) {
	op, _ := d.match(method, path)
	if op == nil {
		return "", fmt.Errorf("openapi: the document has no operation %s %s", method, path)
	}
	return op.key, nil
}

// match returns the operation of method and path, and its path
// parameters' values.
func (d *Doc) match(method, path string) (*operation, map[string]string) {
	segs := strings.Split(path, "/")
	var best *operation
	var bestVals map[string]string
	bestLiterals := -1
	for _, op := range d.ops {
		if op.method != method || len(op.segments) != len(segs) {
			continue
		}
		vals, literals, ok := map[string]string{}, 0, true
		for i, s := range op.segments {
			if m := pathParam.FindStringSubmatch(s); m != nil {
				v, err := url.PathUnescape(segs[i])
				if err != nil || v == "" {
					ok = false
					break
				}
				vals[m[1]] = v
				continue
			}
			if s != segs[i] {
				ok = false
				break
			}
			literals++
		}
		if ok && literals > bestLiterals {
			best, bestVals, bestLiterals = op, vals, literals
		}
	}
	return best, bestVals
}

// Check validates x against the document and returns its operation. A
// request answered 2xx must have the operation's path, query and header
// parameters, with values of their schemas, and a body of its request
// schema (a refused request may be refused for not having them). The answer's status must be one of the operation's
// responses, its required headers present and of their schemas, and
// its body of the response's media type and schema (none when the
// response has no content).
func (d *Doc) Check(x Exchange) (string, error) {
	op, vals := d.match(x.Method, x.URL.EscapedPath())
	if op == nil {
		return "", fmt.Errorf("%v: the document has no operation %s %s", x, x.Method, x.URL.Path)
	}
	var errs []error
	if x.Status >= 200 && x.Status < 300 { // a refused request may be refused for its parameters or body
		errs = append(d.checkParams(op, vals, x), d.checkRequestBody(op, x)...)
	}
	errs = append(errs, d.checkAnswer(op, x)...)
	if len(errs) > 0 {
		return op.key, fmt.Errorf("%v (%s): %w", x, op.key, errors.Join(errs...))
	}
	return op.key, nil
}

// checkParams checks the request's parameters against the operation's.
func (d *Doc) checkParams(op *operation, vals map[string]string, x Exchange) []error {
	var errs []error
	q := x.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(q)) {
		i := slices.IndexFunc(op.params, func(p param) bool { return p.in == "query" && p.name == name })
		if i < 0 {
			if !slices.ContainsFunc(op.params, func(p param) bool { return p.freeForm }) {
				errs = append(errs, fmt.Errorf("query parameter %q is not in the document", name))
			}
			continue
		}
		for _, v := range q[name] {
			errs = append(errs, d.checkText("query parameter "+name, op.params[i].schema, v)...)
		}
	}
	for _, p := range op.params {
		var v string
		var ok bool
		switch p.in {
		case "path":
			v, ok = vals[p.name]
		case "header":
			v, ok = header(x.ReqHeader, p.name)
		case "query": // its values are checked above
			if p.required && !p.freeForm && !q.Has(p.name) {
				errs = append(errs, fmt.Errorf("the required query parameter %q is missing", p.name))
			}
			continue
		default:
			continue
		}
		if !ok {
			if p.required {
				errs = append(errs, fmt.Errorf("the required %s parameter %q is missing", p.in, p.name))
			}
			continue
		}
		errs = append(errs, d.checkText(p.in+" parameter "+p.name, p.schema, v)...)
	}
	return errs
}

// checkText validates a parameter's or header's text against the
// schema at ptr: as the string it is, or as the number it spells (a
// URL holds text only).
func (d *Doc) checkText(what, ptr, text string) []error {
	if ptr == "" {
		return nil
	}
	sch := d.schemas[ptr]
	err := sch.Validate(text)
	if err == nil {
		return nil
	}
	if n, perr := jsonschema.UnmarshalJSON(strings.NewReader(text)); perr == nil {
		if _, num := n.(interface{ String() string }); num && sch.Validate(n) == nil {
			return nil
		}
	}
	return []error{fmt.Errorf("%s %q: %w", what, text, err)}
}

// checkRequestBody checks the body of a request the server accepted.
func (d *Doc) checkRequestBody(op *operation, x Exchange) []error {
	rbv, ok := op.obj["requestBody"]
	if !ok {
		if len(x.ReqBody) > 0 {
			return []error{fmt.Errorf("the request has a body; the operation takes none")}
		}
		return nil
	}
	rb, rptr, err := d.deref(rbv, op.ptr+"/requestBody")
	if err != nil {
		return []error{err}
	}
	if len(x.ReqBody) == 0 {
		if req, _ := rb["required"].(bool); req {
			return []error{fmt.Errorf("the request has no body; the operation's is required")}
		}
		return nil
	}
	content, _ := rb["content"].(map[string]any)
	ct := x.ReqHeader.Get("Content-Type")
	key := mediaMatch(content, ct)
	if key == "" {
		return []error{fmt.Errorf("request Content-Type %q is not one of the operation's: %s", ct, strings.Join(slices.Sorted(maps.Keys(content)), ", "))}
	}
	return d.checkBody("request body", rptr+"/content/"+escape(key)+"/schema", key, x.ReqBody)
}

// checkAnswer checks the status, headers and body of the answer.
func (d *Doc) checkAnswer(op *operation, x Exchange) []error {
	rs, _ := op.obj["responses"].(map[string]any)
	status := strconv.Itoa(x.Status)
	key := ""
	for _, k := range []string{status, status[:1] + "XX", "default"} {
		if _, ok := rs[k]; ok {
			key = k
			break
		}
	}
	if key == "" {
		return []error{fmt.Errorf("status %d is not one of the operation's responses (%s); answer %s",
			x.Status, strings.Join(slices.Sorted(maps.Keys(rs)), ", "), shorten(x.RespBody))}
	}
	r, rptr, err := d.deref(rs[key], op.ptr+"/responses/"+escape(key))
	if err != nil {
		return []error{err}
	}
	var errs []error
	hs, _ := r["headers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(hs)) {
		h, hptr, err := d.deref(hs[name], rptr+"/headers/"+escape(name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v, ok := header(x.RespHeader, name)
		if !ok {
			if req, _ := h["required"].(bool); req {
				errs = append(errs, fmt.Errorf("the answer lacks the required header %s", name))
			}
			continue
		}
		errs = append(errs, d.checkText("answer header "+name, hptr+"/schema", v)...)
	}
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		if len(x.RespBody) > 0 {
			errs = append(errs, fmt.Errorf("the answer has a body; the response has no content: %s", shorten(x.RespBody)))
		}
		return errs
	}
	ct := x.RespHeader.Get("Content-Type")
	mt := mediaMatch(content, ct)
	if mt == "" {
		return append(errs, fmt.Errorf("answer Content-Type %q is not one of the response's: %s", ct, strings.Join(slices.Sorted(maps.Keys(content)), ", ")))
	}
	return append(errs, d.checkBody("answer body", rptr+"/content/"+escape(mt)+"/schema", mt, x.RespBody)...)
}

// checkBody validates a JSON body against the schema at ptr (when the
// media type has one); other media types are not read.
func (d *Doc) checkBody(what, ptr, mediaType string, body []byte) []error {
	sch, ok := d.schemas[ptr]
	if !ok || !isJSON(mediaType) {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []error{fmt.Errorf("%s is not JSON: %w: %s", what, err, shorten(body))}
	}
	if err := sch.Validate(v); err != nil {
		return []error{fmt.Errorf("%s: %w\n%s", what, err, shorten(body))}
	}
	return nil
}

// shorten is a body for messages: its first 2,000 bytes.
func shorten(body []byte) string {
	b := bytes.TrimSpace(body)
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}
