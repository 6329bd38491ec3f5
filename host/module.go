package host

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/skeinrun/skein/host/internal/modules"
)

// ModuleError reports a module that skein cannot run: not wasm, not a
// skein module, a wrong ABI version, imports skein does not provide.
type ModuleError = modules.Error

// describe runs the module in describe mode and returns its registered
// workflows, sorted, and the input schemas it announced (nil for none).
func (h *Host) describe(ctx context.Context, label string, cm *modules.Module) ([]string, map[string]json.RawMessage, error) {
	x := newDescribeExec(h)
	err := h.instantiate(ctx, cm, x)
	if x.failure != nil {
		return nil, nil, &ModuleError{Module: label, Reason: x.failure.Error(), Err: x.failure}
	}
	if !x.described {
		reason := "it did not announce its workflows (does main call skein.Main?)"
		if err != nil {
			reason += ": " + exitDetail(err, x.stderr.String())
		}
		return nil, nil, &ModuleError{Module: label, Reason: reason, Err: err}
	}
	if len(x.workflows) == 0 {
		return nil, nil, &ModuleError{Module: label, Reason: "it registers no workflows (call skein.Register before skein.Main)"}
	}
	sort.Strings(x.workflows)
	return x.workflows, x.inputSchemas, nil
}
