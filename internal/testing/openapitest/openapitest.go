// Package openapitest checks an OpenAPI 3.1 document (server/openapi.json)
// and validates real HTTP exchanges against it: the request's path,
// query, headers and body, and the answer's status, headers and body,
// each against the schema of its operation and status. Schemas are
// JSON Schema 2020-12 (the dialect OpenAPI 3.1 uses), compiled by
// github.com/santhosh-tekuri/jsonschema/v6 with format assertions on.
package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docURL is the document's URL inside the compiler; schemas are
// compiled at docURL#POINTER.
const docURL = "https://skein.invalid/openapi.json"

// methods are the operations a path item may hold.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Doc is a loaded, checked document.
type Doc struct {
	root    map[string]any
	c       *jsonschema.Compiler
	schemas map[string]*jsonschema.Schema // by the JSON pointer of the schema
	ops     map[string]*operation         // by "METHOD /path/{param}"
}

// operation is one operation of the document.
type operation struct {
	key      string // "GET /v1/runs/{id}"
	method   string // upper case
	segments []string
	ptr      string         // the JSON pointer of the operation object
	obj      map[string]any // the operation object
	params   []param        // the path item's and the operation's
}

// param is a parameter, $ref resolved.
type param struct {
	name, in string
	required bool
	freeForm bool   // a query object with explode: any query names
	schema   string // the pointer of its schema, "" for none
}

// Load parses data and checks that it is a well-formed OpenAPI 3.1
// document: its version and info, every $ref resolves inside it, every
// schema compiles (and is a valid 2020-12 schema), every operation has a
// unique operationId and responses, and each path's {parameters} are
// declared path parameters and the other way round.
func Load(data []byte) (*Doc, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("openapi: the document is not JSON: %w", err)
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("openapi: the document is not a JSON object")
	}
	d := &Doc{root: root, c: jsonschema.NewCompiler(), schemas: map[string]*jsonschema.Schema{}, ops: map[string]*operation{}}
	d.c.DefaultDraft(jsonschema.Draft2020)
	d.c.AssertFormat()
	if err := d.c.AddResource(docURL, root); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	var errs []error
	if ver, _ := root["openapi"].(string); !strings.HasPrefix(ver, "3.1.") {
		errs = append(errs, fmt.Errorf("openapi: version %s, want 3.1.x", jsonText(root["openapi"])))
	}
	info, _ := root["info"].(map[string]any)
	for _, k := range []string{"title", "version"} {
		if s, _ := info[k].(string); s == "" {
			errs = append(errs, fmt.Errorf("openapi: info.%s is missing", k))
		}
	}
	errs = append(errs, d.checkRefs(root, "")...)
	if len(errs) > 0 { // the rest follows references
		return nil, errors.Join(errs...)
	}
	errs = append(errs, d.compileComponents()...)
	errs = append(errs, d.loadOperations()...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return d, nil
}

// Operations returns the document's operations, "METHOD /path", sorted.
func (d *Doc) Operations() []string {
	return slices.Sorted(maps.Keys(d.ops))
}

// checkRefs reports every $ref under v (at pointer ptr) that is not a
// pointer into the document naming an existing value.
func (d *Doc) checkRefs(v any, ptr string) []error {
	var errs []error
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok {
			if _, _, err := d.lookupRef(r); err != nil {
				errs = append(errs, fmt.Errorf("openapi: at %s: %w", ptr, err))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			errs = append(errs, d.checkRefs(v[k], ptr+"/"+escape(k))...)
		}
	case []any:
		for i, x := range v {
			errs = append(errs, d.checkRefs(x, ptr+"/"+strconv.Itoa(i))...)
		}
	}
	return errs
}

// lookupRef resolves a local $ref, "#/a/b", to its value and pointer.
func (d *Doc) lookupRef(ref string) (any, string, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || (ptr != "" && !strings.HasPrefix(ptr, "/")) {
		return nil, "", fmt.Errorf("$ref %q is not a JSON pointer into the document", ref)
	}
	v, err := d.lookup(ptr)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q: %w", ref, err)
	}
	return v, ptr, nil
}

// lookup returns the value at a JSON pointer.
func (d *Doc) lookup(ptr string) (any, error) {
	var v any = d.root
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("no %q at %s", tok, ptr)
			}
			v = x
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no index %q at %s", tok, ptr)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("%s goes through a scalar", ptr)
		}
	}
	return v, nil
}

// deref follows the $refs of the object at ptr (at most 8), and returns
// the object they lead to and its pointer.
func (d *Doc) deref(v any, ptr string) (map[string]any, string, error) {
	for range 8 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("openapi: %s is not an object", ptr)
		}
		r, ok := m["$ref"].(string)
		if !ok {
			return m, ptr, nil
		}
		if v, ptr, _ = d.lookupRef(r); v == nil {
			return nil, "", fmt.Errorf("openapi: at %s: $ref %q does not resolve", ptr, r)
		}
	}
	return nil, "", fmt.Errorf("openapi: %s: $ref chain too long", ptr)
}

// compile compiles the schema at ptr (once).
func (d *Doc) compile(ptr string) error {
	if _, ok := d.schemas[ptr]; ok {
		return nil
	}
	sch, err := d.c.Compile(docURL + "#" + urlPointer(ptr))
	if err != nil {
		return fmt.Errorf("openapi: the schema at %s does not compile: %w", ptr, err)
	}
	d.schemas[ptr] = sch
	return nil
}

// compileComponents compiles every schema of the components, and of the
// parameters, headers and media types they hold.
func (d *Doc) compileComponents() []error {
	var errs []error
	comps, _ := d.root["components"].(map[string]any)
	each := func(kind string, f func(ptr string) []error) {
		m, _ := comps[kind].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(m)) {
			errs = append(errs, f("/components/"+kind+"/"+escape(name))...)
		}
	}
	each("schemas", func(ptr string) []error { return errorList(d.compile(ptr)) })
	each("parameters", func(ptr string) []error { _, err := d.param(ptr); return errorList(err) })
	each("headers", d.compileHeader)
	each("responses", d.compileResponse)
	each("requestBodies", d.compileContent)
	return errs
}

func errorList(err error) []error {
	if err == nil {
		return nil
	}
	return []error{err}
}

// compileHeader compiles the schema of the header object at ptr.
func (d *Doc) compileHeader(ptr string) []error {
	v, _ := d.lookup(ptr)
	h, hptr, err := d.deref(v, ptr)
	if err != nil {
		return []error{err}
	}
	if _, ok := h["schema"]; !ok {
		return []error{fmt.Errorf("openapi: the header at %s has no schema", hptr)}
	}
	return errorList(d.compile(hptr + "/schema"))
}

// compileResponse compiles the schemas of the response at ptr.
func (d *Doc) compileResponse(ptr string) []error {
	v, _ := d.lookup(ptr)
	r, rptr, err := d.deref(v, ptr)
	if err != nil {
		return []error{err}
	}
	if s, _ := r["description"].(string); s == "" {
		return []error{fmt.Errorf("openapi: the response at %s has no description", rptr)}
	}
	errs := d.compileContent(rptr)
	hs, _ := r["headers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(hs)) {
		errs = append(errs, d.compileHeader(rptr+"/headers/"+escape(name))...)
	}
	return errs
}

// compileContent compiles the media type schemas of the request body or
// response at ptr.
func (d *Doc) compileContent(ptr string) []error {
	v, _ := d.lookup(ptr)
	o, optr, err := d.deref(v, ptr)
	if err != nil {
		return []error{err}
	}
	content, _ := o["content"].(map[string]any)
	var errs []error
	for _, mt := range slices.Sorted(maps.Keys(content)) {
		m, _ := content[mt].(map[string]any)
		if _, ok := m["schema"]; ok {
			errs = append(errs, errorList(d.compile(optr+"/content/"+escape(mt)+"/schema"))...)
		}
	}
	return errs
}

// param reads and compiles the parameter at ptr.
func (d *Doc) param(ptr string) (param, error) {
	v, _ := d.lookup(ptr)
	m, mptr, err := d.deref(v, ptr)
	if err != nil {
		return param{}, err
	}
	p := param{}
	p.name, _ = m["name"].(string)
	p.in, _ = m["in"].(string)
	p.required, _ = m["required"].(bool)
	if p.name == "" || !slices.Contains([]string{"path", "query", "header", "cookie"}, p.in) {
		return param{}, fmt.Errorf("openapi: the parameter at %s needs a name and an in of path, query, header or cookie", mptr)
	}
	if p.in == "path" && !p.required {
		return param{}, fmt.Errorf("openapi: the path parameter %q at %s must be required", p.name, mptr)
	}
	if s, ok := m["schema"].(map[string]any); ok {
		p.schema = mptr + "/schema"
		explode, _ := m["explode"].(bool)
		p.freeForm = p.in == "query" && explode && s["type"] == "object"
		if err := d.compile(p.schema); err != nil {
			return param{}, err
		}
	}
	return p, nil
}

// pathParam matches a path template's "{name}" segment.
var pathParam = regexp.MustCompile(`^\{([^{}/]+)\}$`)

// loadOperations reads and checks every operation of the paths.
func (d *Doc) loadOperations() []error {
	paths, ok := d.root["paths"].(map[string]any)
	if !ok {
		return []error{errors.New("openapi: the document has no paths")}
	}
	var errs []error
	ids := map[string]string{}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		pptr := "/paths/" + escape(path)
		if !strings.HasPrefix(path, "/") {
			errs = append(errs, fmt.Errorf("openapi: path %q does not start with /", path))
			continue
		}
		item, _ := paths[path].(map[string]any)
		shared, err := d.params(item, pptr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, m := range methods {
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op, err := d.loadOperation(path, m, o, pptr+"/"+m, shared)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			id, _ := o["operationId"].(string)
			if other, dup := ids[id]; dup {
				errs = append(errs, fmt.Errorf("openapi: %s and %s have the same operationId %q", other, op.key, id))
			}
			ids[id] = op.key
			d.ops[op.key] = op
		}
	}
	return errs
}

// params reads the parameters of the object at ptr.
func (d *Doc) params(obj map[string]any, ptr string) ([]param, error) {
	list, _ := obj["parameters"].([]any)
	var ps []param
	for i := range list {
		p, err := d.param(ptr + "/parameters/" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// loadOperation reads and checks one operation.
func (d *Doc) loadOperation(path, method string, o map[string]any, ptr string, shared []param) (*operation, error) {
	op := &operation{key: strings.ToUpper(method) + " " + path, method: strings.ToUpper(method),
		segments: strings.Split(path, "/"), ptr: ptr, obj: o}
	if id, _ := o["operationId"].(string); id == "" {
		return nil, fmt.Errorf("openapi: %s has no operationId", op.key)
	}
	own, err := d.params(o, ptr)
	if err != nil {
		return nil, err
	}
	// An operation's parameter replaces the path item's of the same name and place.
	for _, p := range shared {
		if !slices.ContainsFunc(own, func(q param) bool { return q.name == p.name && q.in == p.in }) {
			op.params = append(op.params, p)
		}
	}
	op.params = append(op.params, own...)
	var errs []error
	declared := map[string]bool{}
	for _, p := range op.params {
		if p.in == "path" {
			declared[p.name] = true
		}
	}
	inTemplate := map[string]bool{}
	for _, seg := range op.segments {
		if m := pathParam.FindStringSubmatch(seg); m != nil {
			inTemplate[m[1]] = true
			if !declared[m[1]] {
				errs = append(errs, fmt.Errorf("openapi: %s: the path parameter {%s} is not declared", op.key, m[1]))
			}
		}
	}
	for name := range declared {
		if !inTemplate[name] {
			errs = append(errs, fmt.Errorf("openapi: %s declares the path parameter %q, which its path does not hold", op.key, name))
		}
	}
	if _, ok := o["requestBody"]; ok {
		errs = append(errs, d.compileContent(ptr+"/requestBody")...)
	}
	rs, _ := o["responses"].(map[string]any)
	if len(rs) == 0 {
		errs = append(errs, fmt.Errorf("openapi: %s has no responses", op.key))
	}
	for _, status := range slices.Sorted(maps.Keys(rs)) {
		if !validStatus(status) {
			errs = append(errs, fmt.Errorf("openapi: %s: response %q is not a status, 1XX-5XX or default", op.key, status))
		}
		errs = append(errs, d.compileResponse(ptr+"/responses/"+escape(status))...)
	}
	errs = append(errs, d.checkSecurity(op.key, o)...)
	return op, errors.Join(errs...)
}

func validStatus(s string) bool {
	if s == "default" {
		return true
	}
	if len(s) != 3 || s[0] < '1' || s[0] > '5' {
		return false
	}
	if s[1:] == "XX" {
		return true
	}
	_, err := strconv.Atoi(s)
	return err == nil
}

// checkSecurity checks that the security requirements of the operation
// (or the document's) name security schemes of the components.
func (d *Doc) checkSecurity(key string, o map[string]any) []error {
	sec, ok := o["security"].([]any)
	if !ok {
		sec, _ = d.root["security"].([]any)
	}
	comps, _ := d.root["components"].(map[string]any)
	schemes, _ := comps["securitySchemes"].(map[string]any)
	var errs []error
	for _, req := range sec {
		m, _ := req.(map[string]any)
		for name := range m {
			if _, ok := schemes[name]; !ok {
				errs = append(errs, fmt.Errorf("openapi: %s: security scheme %q is not in components.securitySchemes", key, name))
			}
		}
	}
	return errs
}

// jsonText is v as JSON, for messages.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// escape escapes a JSON pointer token.
func escape(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// urlPointer is a JSON pointer as a URL fragment: each token escaped.
func urlPointer(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}

// mediaMatch returns the key of content that media type ct matches: the
// same type, "type/*" or "*/*" (which also takes a body without a
// Content-Type); "" for none.
func mediaMatch(content map[string]any, ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil { // none, or not a media type: only */* takes it
		mt = "-/-"
	}
	major, _, _ := strings.Cut(mt, "/")
	for _, k := range []string{mt, major + "/*", "*/*"} {
		if _, ok := content[k]; ok {
			return k
		}
	}
	return ""
}

// isJSON reports whether media type key is JSON.
func isJSON(key string) bool {
	return key == "application/json" || strings.HasSuffix(key, "+json")
}

// header returns the first value of name in h, and whether it is there.
func header(h http.Header, name string) (string, bool) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}
