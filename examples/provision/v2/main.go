// Command v2 is version 2 of the provision workflows (../main.go): it
// checks the project's quota after creating the VM and before the
// fork. In provision_vm the new step takes the position of the fork
// (key 2), so the fork's keys shift (2.0.1 becomes 3.0.1): a run of
// version 1 that recorded anything of the fork would, resumed with
// version 2, skip its recorded work and do it again under new keys. In
// provision_vm_named the new step has a name (check-quota), every key
// stays, and every run of version 1 goes on with version 2.
// `skein check --upgrade` tells the two apart (docs/upgrades.md).
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

func checkQuota(size string) func(*skein.StepContext) (string, error) {
	return func(*skein.StepContext) (string, error) { return "quota ok for " + size, nil }
}

func attachIP(vm string) func(*skein.StepContext) (string, error) {
	return func(*skein.StepContext) (string, error) { return "10.0.0.7/" + vm, nil }
}

func setupSG(vm, name string) func(*skein.StepContext) (string, error) {
	return func(*skein.StepContext) (string, error) { return "sg-" + name + "/" + vm, nil }
}

// provision runs create_vm, check_quota, then attach_ip and
// setup_security_group in a parallel fork, and returns the ip.
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
	if _, err := skein.Step(ctx, "check_quota", checkQuota(in.Size), id("check-quota")...); err != nil {
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
