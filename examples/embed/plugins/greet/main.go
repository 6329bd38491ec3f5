// Command greet is a plugin of examples/embed: it calls the host activity
// "upper" and builds a greeting in a step.
package main

import "github.com/skeinrun/skein/guest-sdk/skein"

func greet(ctx *skein.Context, name string) (string, error) {
	up, err := skein.Call[string](ctx, "upper", name).Get(ctx)
	if err != nil {
		return "", err
	}
	return skein.Step(ctx, "greeting", func(*skein.StepContext) (string, error) {
		return "hello, " + up, nil
	})
}

func main() {
	skein.Register("greet", greet)
	skein.Main()
}
