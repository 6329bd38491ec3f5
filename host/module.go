package host

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/skeinrun/skein/host/internal/exec"
	"github.com/skeinrun/skein/host/internal/modules"
)

// ModuleError reports a module that skein cannot run: not wasm, not a
// skein module, a wrong ABI version, imports skein does not provide.
type ModuleError = modules.Error

// describe runs the module in describe mode and returns its registered
// workflows, sorted, and the input schemas it announced (nil for none).
func (h *Host) describe(ctx context.Context, label string, cm *modules.Module) ([]string, map[string]json.RawMessage, error) {
	x := exec.NewDescribe(h.execHost())
	err := x.Instantiate(ctx, cm)
	if x.Failure != nil {
		return nil, nil, &ModuleError{Module: label, Reason: x.Failure.Error(), Err: x.Failure}
	}
	if !x.Described {
		reason := "it did not announce its workflows (does main call skein.Main?)"
		if err != nil {
			reason += ": " + exec.ExitDetail(err, x.Stderr.String())
		}
		return nil, nil, &ModuleError{Module: label, Reason: reason, Err: err}
	}
	if len(x.Workflows) == 0 {
		return nil, nil, &ModuleError{Module: label, Reason: "it registers no workflows (call skein.Register before skein.Main)"}
	}
	sort.Strings(x.Workflows)
	return x.Workflows, x.InputSchemas, nil
}
