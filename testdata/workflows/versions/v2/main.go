// Command v2 is version 2 of the v1 module: a step inserted at the top
// of positional and named, and alpha renamed to alpha2 in rename.
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

// positional: audit (1) inserted, then create_vm (2), sleep (3), finish (4).
func positional(ctx *skein.Context, _ struct{}) (string, error) {
	if _, err := step(ctx, "audit", "audited"); err != nil {
		return "", err
	}
	vm, err := step(ctx, "create_vm", "vm")
	if err != nil {
		return "", err
	}
	if err := wait(ctx); err != nil {
		return "", err
	}
	return step(ctx, "finish", vm+"+done")
}

// named: an unnamed audit step (1) inserted before the named ones.
func named(ctx *skein.Context, _ struct{}) (string, error) {
	if _, err := step(ctx, "audit", "audited"); err != nil {
		return "", err
	}
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

// rename: alpha renamed alpha2 (and its value changed), wait, beta.
func rename(ctx *skein.Context, _ struct{}) (string, error) {
	a, err := step(ctx, "a", "A2", skein.ID("alpha2"))
	if err != nil {
		return "", err
	}
	if err := wait(ctx, skein.ID("wait")); err != nil {
		return "", err
	}
	b, err := step(ctx, "b", "B", skein.ID("beta"))
	return a + b, err
}

// long: v1's 40 steps, with step 30 renamed.
func long(ctx *skein.Context, _ struct{}) (string, error) {
	for i := 1; i <= 40; i++ {
		fn := "s"
		if i == 30 {
			fn = "s-renamed"
		}
		if _, err := step(ctx, fn, "v"); err != nil {
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
