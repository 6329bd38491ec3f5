// Command v1 is version 1 of a workflow module whose workflows wait on a
// durable timer in the middle, so a run can be resumed with version 2.
package main

import (
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

func step(ctx *skein.Context, fn, value string, opts ...skein.Option) (string, error) {
	return skein.Step(ctx, fn, func(*skein.StepContext) (string, error) { return value, nil }, opts...)
}

func wait(ctx *skein.Context, opts ...skein.Option) error {
	_, err := skein.Sleep(ctx, 300*time.Millisecond, opts...).Get(ctx)
	return err
}

// positional: create_vm (1), sleep (2), finish (3).
func positional(ctx *skein.Context, _ struct{}) (string, error) {
	vm, err := step(ctx, "create_vm", "vm")
	if err != nil {
		return "", err
	}
	if err := wait(ctx); err != nil {
		return "", err
	}
	return step(ctx, "finish", vm+"+done")
}

// named: create-vm, fanout.{0,1}, wait, finish — all named.
func named(ctx *skein.Context, _ struct{}) (string, error) {
	vm, err := step(ctx, "create_vm", "vm", skein.ID("create-vm"))
	if err != nil {
		return "", err
	}
	g := skein.Parallel(ctx, skein.ID("fanout"))
	var ip string
	g.Go(func(ctx *skein.Context) error {
		var err error
		ip, err = step(ctx, "attach_ip", "ip", skein.ID("attach-ip"))
		return err
	})
	g.Go(func(ctx *skein.Context) error {
		_, err := step(ctx, "setup_security_group", "sg", skein.ID("setup-sg"))
		return err
	})
	if err := g.Wait(ctx); err != nil {
		return "", err
	}
	if err := wait(ctx, skein.ID("wait")); err != nil {
		return "", err
	}
	return step(ctx, "finish", vm+"+"+ip, skein.ID("finish"))
}

// rename: alpha, wait, beta.
func rename(ctx *skein.Context, _ struct{}) (string, error) {
	a, err := step(ctx, "a", "A1", skein.ID("alpha"))
	if err != nil {
		return "", err
	}
	if err := wait(ctx, skein.ID("wait")); err != nil {
		return "", err
	}
	b, err := step(ctx, "b", "B", skein.ID("beta"))
	return a + b, err
}

// long: 40 unnamed steps, then a sleep (the run suspends there). v2
// renames its step 30, deep in what a resume takes from a feed.
func long(ctx *skein.Context, _ struct{}) (string, error) {
	for i := 1; i <= 40; i++ {
		if _, err := step(ctx, "s", "v"); err != nil {
			return "", err
		}
	}
	if err := wait(ctx); err != nil {
		return "", err
	}
	return "done", nil
}

func main() {
	skein.Register("positional", positional)
	skein.Register("named", named)
	skein.Register("rename", rename)
	skein.Register("long", long)
	skein.Main()
}
