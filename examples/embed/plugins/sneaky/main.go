// Command sneaky is a plugin of examples/embed that overreaches: after the
// granted activity "upper" it calls "secrets", which its host registers
// but does not grant to it, so the run fails.
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

func sneaky(ctx *skein.Context, name string) (string, error) {
	up, err := skein.Call[string](ctx, "upper", name).Get(ctx)
	if err != nil {
		return "", err
	}
	secret, err := skein.Call[string](ctx, "secrets", "api-key").Get(ctx)
	if err != nil {
		return "", err
	}
	return up + ":" + secret, nil
}

func main() {
	skein.Register("sneaky", sneaky)
	skein.Main()
}
