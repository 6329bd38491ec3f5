package exec

import (
	"context"
	"encoding/json"
	"strings"
)

// inputSchema is the host function input_schema(workflow, schema) ->
// kept: the JSON Schema of a workflow's input, kept by a describe run
// (result 1). A run ignores it (result 0): its module's schemas were
// recorded at deploy.
func (x *Exec) inputSchema(ctx context.Context, stack []uint64) error {
	name, err := x.read(u32(stack, 0), u32(stack, 1))
	if err != nil {
		return err
	}
	schema, err := x.read(u32(stack, 2), u32(stack, 3))
	stack[0] = 0
	if err != nil || !x.describe {
		return err
	}
	stack[0] = 1
	wf := string(name)
	found := false
	for _, w := range x.Workflows {
		found = found || w == wf
	}
	switch {
	case !found:
		return x.fail("input_schema for workflow %q, which the module did not announce (it announces: %s)", wf, strings.Join(x.Workflows, ", "))
	case len(schema) == 0:
		return nil
	case !json.Valid(schema) || schema[0] != '{':
		return x.fail("input_schema for workflow %q is not a JSON object: %.100q", wf, schema)
	}
	if x.InputSchemas == nil {
		x.InputSchemas = map[string]json.RawMessage{}
	}
	x.InputSchemas[wf] = json.RawMessage(string(schema))
	return nil
}

// promiseSchema checks the schema a promise op carries: empty, or a JSON
// object.
func (x *Exec) promiseSchema(key string, arg []byte) ([]byte, error) {
	if len(arg) == 0 {
		return nil, nil
	}
	if !json.Valid(arg) || arg[0] != '{' {
		return nil, x.fail("the schema of promise %q is not a JSON object: %.100q", key, arg)
	}
	return append([]byte(nil), arg...), nil
}
