package main

// skein key: the API keys of a server (docs/security.md, "API keys and
// roles").

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
	"github.com/skeinrun/skein/server"
)

func cmdKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	verb, rest, err := subcommand("key", args, "create, list, revoke or rotate")
	if err != nil {
		return err
	}
	switch verb {
	case "help":
		newFlagSet("key", stderr).Usage()
		return flag.ErrHelp
	case "create":
		return keyCreate(ctx, rest, stdout, stderr)
	case "list":
		return keyList(ctx, rest, stdout, stderr)
	case "revoke", "rotate":
		return keyAct(ctx, verb, rest, stdout, stderr)
	}
	return &exitError{code: exitUsage, err: fmt.Errorf("unknown subcommand %q: want create, list, revoke or rotate", verb)}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func keyCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("key", stderr)
	sf := addServerFlags(fs) // its --namespace is the key's
	role := fs.String("role", "", "the key's role: read, run, deploy, worker, admin or root")
	name := fs.String("name", "", "a label")
	expires := fs.String("expires", "", "a lifetime after which the key is refused: 36h, 90m, 30d (default: never)")
	var acts listFlag
	fs.Var(&acts, "activity", "for a worker key: an activity name it may claim tasks of (repeatable; default: all)")
	asJSON := fs.Bool("json", false, "print the key and its secret as JSON")
	c, err := sf.parseNone(fs, args, "key create")
	if err != nil {
		return err
	}
	if *role == "" {
		return &exitError{code: exitUsage, err: fmt.Errorf("--role is required\n%s", usageHint("key"))}
	}
	if *expires != "" {
		if _, err := server.ParseExpiry(*expires); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--expires: %w", err)}
		}
	}
	ns := sf.ns()
	if *role == "root" {
		ns = "" // server-wide; a $SKEIN_NAMESPACE of the shell is not the key's
	}
	ks, err := c.CreateKey(ctx, client.KeyRequest{Namespace: ns, Role: *role, Name: *name, ExpiresIn: *expires, Activities: acts})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, ks)
	}
	fmt.Fprintf(stdout, "%s\n", ks.Secret)
	fmt.Fprintf(stderr, "key %s created (%s); the secret above is shown this once: the server keeps only its digest\n", printable(ks.Key.ID), keyLine(ks.Key))
	return nil
}

func keyList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("key", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the keys as JSON")
	c, err := sf.parseNone(fs, args, "key list")
	if err != nil {
		return err
	}
	ks, err := c.Keys(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, client.KeyList{Keys: ks})
	}
	if len(ks) == 0 {
		fmt.Fprintln(stdout, "no keys")
	}
	for _, k := range ks {
		fmt.Fprintf(stdout, "%s  %s\n", printable(k.ID), keyLine(k))
	}
	return nil
}

func keyAct(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("key", stderr)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the key as JSON")
	c, id, err := sf.parse(fs, args, "key ID")
	if err != nil {
		return err
	}
	if verb == "revoke" {
		k, err := c.RevokeKey(ctx, id)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, k)
		}
		fmt.Fprintf(stdout, "key %s revoked: its secret is refused from the next request on\n", printable(k.ID))
		return nil
	}
	ks, err := c.RotateKey(ctx, id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, ks)
	}
	fmt.Fprintf(stdout, "%s\n", ks.Secret)
	fmt.Fprintf(stderr, "key %s rotated: the secret above is shown this once; the old one is refused from the next request on\n", printable(ks.Key.ID))
	return nil
}

// keyLine describes a key on one line.
func keyLine(k client.Key) string {
	ns := k.Namespace
	if ns == "" {
		ns = "(all namespaces)"
	}
	s := fmt.Sprintf("role %s, namespace %s", k.Role, ns)
	if k.Name != "" {
		s += ", name " + k.Name
	}
	if len(k.Activities) > 0 {
		s += ", activities " + strings.Join(k.Activities, ",")
	}
	for _, t := range []struct {
		what string
		at   *time.Time
	}{{"expires", k.ExpiresAt}, {"last used", k.LastUsedAt}, {"revoked", k.RevokedAt}} {
		if t.at != nil {
			s += fmt.Sprintf(", %s %s", t.what, t.at.Format(time.RFC3339))
		}
	}
	return printable(s)
}
