package main

// skein namespace: create, list, describe, update and delete the
// namespaces of a server (docs/tenants.md, "Namespaces").

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/skeinrun/skein/client"
)

const namespaceVerbs = "create, list, describe, update or delete"

func cmdNamespace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, rest, err := subcommand("namespace", args, namespaceVerbs)
	if err != nil {
		return err
	}
	fs := newFlagSet("namespace", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	switch verb {
	case "help":
		newNamespaceFields(fs)
		fs.Usage()
		return flag.ErrHelp
	case "create", "update":
		return namespaceWrite(ctx, verb, fs, sf, rest, asJSON, stdout)
	case "list":
		c, err := sf.parseNone(fs, rest, "namespace list")
		if err != nil {
			return err
		}
		return namespaceList(ctx, c, *asJSON, stdout)
	case "describe", "delete":
		c, name, err := sf.parse(fs, rest, "namespace NAME")
		if err != nil {
			return err
		}
		if verb == "delete" {
			if err := c.DeleteNamespace(ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "namespace %s deleted\n", printable(name))
			return nil
		}
		n, err := c.Namespace(ctx, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, n)
		}
		printNamespace(stdout, n)
		return nil
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want %s", verb, namespaceVerbs)}
}

// namespaceFields are the flags of a namespace's fields.
type namespaceFields struct {
	description, retention *string
	weight                 *int
}

func newNamespaceFields(fs *flag.FlagSet) namespaceFields {
	return namespaceFields{
		description: fs.String("description", "", "what the namespace is for"),
		retention:   fs.String("retention", "", `how long it keeps ended runs: "default" (the server's), "forever" (or 0) or a duration such as 720h`),
		weight:      fs.Int("weight", 0, "its share of execution slots, 1 to 1000 (default 1)"),
	}
}

// given returns a field's value if its flag was given on the command line.
func given[T any](fs *flag.FlagSet, name string, v *T) *T {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if !set {
		return nil
	}
	return v
}

func namespaceWrite(ctx context.Context, verb string, fs *flag.FlagSet, sf *serverFlags, args []string, asJSON *bool, stdout io.Writer) error {
	f := newNamespaceFields(fs)
	c, name, err := sf.parse(fs, args, "namespace NAME")
	if err != nil {
		return err
	}
	var n client.Namespace
	if verb == "create" {
		req := client.NamespaceRequest{Name: name, Description: *f.description, Retention: *f.retention, Weight: given(fs, "weight", f.weight)}
		n, err = c.CreateNamespace(ctx, req)
	} else {
		u := client.NamespaceUpdate{Description: given(fs, "description", f.description), Retention: given(fs, "retention", f.retention),
			Weight: given(fs, "weight", f.weight)}
		if u == (client.NamespaceUpdate{}) {
			return &exitError{code: exitUsage, err: fmt.Errorf("nothing to update: give --description, --retention or --weight\n%s", usageHint("namespace"))}
		}
		n, err = c.UpdateNamespace(ctx, name, u)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, n)
	}
	fmt.Fprintf(stdout, "namespace %s %sd\n", printable(n.Name), verb)
	printNamespace(stdout, n)
	return nil
}

func namespaceList(ctx context.Context, c *client.Client, asJSON bool, stdout io.Writer) error {
	ns, err := c.Namespaces(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, client.NamespaceList{Namespaces: ns})
	}
	for _, n := range ns {
		fmt.Fprintf(stdout, "%s  weight %d  retention %s", printable(n.Name), n.Weight, printable(n.Retention))
		if n.Description != "" {
			fmt.Fprintf(stdout, "  %s", printable(n.Description))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

func printNamespace(w io.Writer, n client.Namespace) {
	fmt.Fprintf(w, "name:        %s\n", printable(n.Name))
	if n.Description != "" {
		fmt.Fprintf(w, "description: %s\n", printable(n.Description))
	}
	fmt.Fprintf(w, "retention:   %s\n", printable(n.Retention))
	fmt.Fprintf(w, "weight:      %d\n", n.Weight)
	fmt.Fprintf(w, "created:     %s\n", n.CreatedAt.Format(time.RFC3339))
	fmt.Fprintf(w, "updated:     %s\n", n.UpdatedAt.Format(time.RFC3339))
}
