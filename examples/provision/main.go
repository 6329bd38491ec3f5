// Command provision is the provision_vm workflow of docs/design.md ("Ids"), in
// two versions: provision_vm with positional ids (1, 2.0.1, 2.1.1) and
// provision_vm_named with named ids (create-vm, fanout.0.attach-ip,
// fanout.1.setup-sg).
package main

import (
	"fmt"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	Name string `json:"name"`
	Size string `json:"size"`
}

func createVM(name, size string) func(*skein.StepContext) (string, error) {
	return func(*skein.StepContext) (string, error) { return fmt.Sprintf("vm-%s-%s", name, size), nil }
}

func attachIP(vm string) func(*skein.StepContext) (string, error) {
	return func(*skein.StepContext) (string, error) { return "10.0.0.7/" + vm, nil }
}

func setupSG(vm, name string) func(*skein.StepContext) (string, error) {
	return func(*skein.StepContext) (string, error) { return "sg-" + name + "/" + vm, nil }
}

// provision runs create_vm, then attach_ip and setup_security_group in a
// parallel fork, and returns the ip. names gives the ids, or nil.
func provision(ctx *skein.Context, in input, named bool) (string, error) {
	id := func(name string) []skein.Option {
		if !named {
			return nil
		}
		return []skein.Option{skein.ID(name)}
	}
	vm, err := skein.Step(ctx, "create_vm", createVM(in.Name, in.Size), id("create-vm")...)
	if err != nil {
		return "", err
	}
	var ip string
	g := skein.Parallel(ctx, id("fanout")...)
	g.Go(func(ctx *skein.Context) error {
		var err error
		ip, err = skein.Step(ctx, "attach_ip", attachIP(vm), id("attach-ip")...)
		return err
	})
	g.Go(func(ctx *skein.Context) error {
		_, err := skein.Step(ctx, "setup_security_group", setupSG(vm, in.Name), id("setup-sg")...)
		return err
	})
	if err := g.Wait(ctx); err != nil {
		return "", err
	}
	return ip, nil
}

func main() {
	skein.Register("provision_vm", func(ctx *skein.Context, in input) (string, error) { return provision(ctx, in, false) })
	skein.Register("provision_vm_named", func(ctx *skein.Context, in input) (string, error) { return provision(ctx, in, true) })
	skein.Main()
}
