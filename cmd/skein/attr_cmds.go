package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/store"
)

// skein attribute: declare, list and delete search attributes on a
// server (docs/operations.md, "Search attributes").

func cmdAttribute(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, rest, err := subcommand("attribute", args, "create, list or delete")
	if err != nil {
		return err
	}
	fs := newFlagSet("attribute", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	switch verb {
	case "help":
		fs.Usage()
		return flag.ErrHelp
	case "create":
		typ := fs.String("type", "", "the attribute's type: string, int, float, bool or time")
		c, name, err := sf.parse(fs, rest, "attribute NAME")
		if err != nil {
			return err
		}
		if *typ == "" {
			return &exitError{code: exitUsage, err: fmt.Errorf("--type is required: string, int, float, bool or time\n%s", usageHint("attribute"))}
		}
		a, err := c.CreateAttribute(ctx, client.AttributeRequest{Name: name, Type: *typ})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, a)
		}
		fmt.Fprintf(stdout, "search attribute %s (%s) created\n", printable(a.Name), printable(a.Type))
		return nil
	case "delete":
		c, name, err := sf.parse(fs, rest, "attribute NAME")
		if err != nil {
			return err
		}
		if err := c.DeleteAttribute(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "search attribute %s deleted, with every run's value of it\n", printable(name))
		return nil
	case "list":
		return attributeList(ctx, fs, sf, rest, *asJSON, stdout)
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want create, list or delete", verb)}
}

func attributeList(ctx context.Context, fs *flag.FlagSet, sf *serverFlags, args []string, asJSON bool, stdout io.Writer) error {
	c, err := sf.parseNone(fs, args, "attribute list")
	if err != nil {
		return err
	}
	as, err := c.Attributes(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, client.AttributeList{Attributes: as})
	}
	if len(as) == 0 {
		fmt.Fprintln(stdout, "no search attributes")
	}
	for _, a := range as {
		fmt.Fprintf(stdout, "%s  %s\n", printable(a.Name), printable(a.Type))
	}
	return nil
}

// parseNone parses the flags of a command that takes no argument (what)
// and returns the client they name.
func (sf *serverFlags) parseNone(fs *flag.FlagSet, args []string, what string) (*client.Client, error) {
	if err := parseNoArgs(fs, args); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return sf.client()
}

// attrFlag collects repeated --attr NAME=VALUE flags.
type attrFlag map[string]string

func (f attrFlag) String() string { return "" }

func (f attrFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", s)
	}
	if _, dup := f[name]; dup {
		return fmt.Errorf("attribute %s given twice", name)
	}
	f[name] = value
	return nil
}

// typedAttrs reads the --attr values as the types the server declares
// (GET /v1/attributes): the start request's attributes.
func typedAttrs(ctx context.Context, c *client.Client, f attrFlag) (map[string]any, error) {
	if len(f) == 0 {
		return nil, nil
	}
	as, err := c.Attributes(ctx)
	if err != nil {
		return nil, err
	}
	types := map[string]store.AttrType{}
	for _, a := range as {
		types[a.Name] = store.AttrType(a.Type)
	}
	out := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(f)) {
		t, ok := types[name]
		if !ok {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--attr %s: no such search attribute is declared (skein attribute create %s --type T)", name, name)}
		}
		v, err := store.ParseAttrValue(t, f[name])
		if err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--attr %s: the attribute is a %s: %v", name, t, err)}
		}
		out[name] = store.AttrsJSONValue(v)
	}
	return out, nil
}

// printAttrs prints a run's attributes, one line, sorted by name.
func printAttrs(w io.Writer, attrs map[string]any) {
	if len(attrs) == 0 {
		return
	}
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(attrs)) {
		if i > 0 {
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "%s=%v", name, attrs[name])
	}
	fmt.Fprintf(w, "attributes: %s\n", printable(b.String()))
}
