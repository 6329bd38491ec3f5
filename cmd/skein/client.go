package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/skeinrun/skein/client"
)

// defaultServer is where the client commands look for `skein serve`.
const defaultServer = "http://127.0.0.1:7070"

// serverFlags are the flags every client command shares.
type serverFlags struct {
	url, token, namespace *string
}

func addServerFlags(fs *flag.FlagSet) *serverFlags {
	// The defaults come from the environment when the flags are read, so
	// that --help never prints a token.
	return &serverFlags{
		url:       fs.String("server", "", "URL of a skein server (default $SKEIN_SERVER, else "+defaultServer+")"),
		token:     fs.String("token", "", "bearer token of the server: --token of skein serve or an API key's secret (default $SKEIN_TOKEN)"),
		namespace: fs.String("namespace", "", "the namespace a root key acts in, sent as X-Skein-Namespace (default $SKEIN_NAMESPACE; other keys act in their own)"),
	}
}

// chosen reports, for a command that can also read a local database,
// whether to ask the server: --server was given or $SKEIN_SERVER is
// set, and neither --db nor --store was given.
func (f *serverFlags) chosen(fs *flag.FlagSet) bool {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["db"] || set["store"] {
		return false
	}
	return set["server"] || os.Getenv("SKEIN_SERVER") != ""
}

// client returns the client of the server the flags name (docs/api.md).
func (f *serverFlags) client() (*client.Client, error) {
	base := cmp.Or(*f.url, os.Getenv("SKEIN_SERVER"), defaultServer)
	c, err := client.New(base, client.WithToken(cmp.Or(*f.token, os.Getenv("SKEIN_TOKEN"))),
		client.WithNamespace(f.ns()), client.WithHTTPClient(&http.Client{Timeout: 5 * time.Minute}))
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("server %q is not an http:// or https:// URL", base)}
	}
	return c, nil
}

// ns is the namespace the flags name: --namespace, else $SKEIN_NAMESPACE.
func (f *serverFlags) ns() string { return cmp.Or(*f.namespace, os.Getenv("SKEIN_NAMESPACE")) }

// clientText is the text of a command's error, with package client's
// errors in the CLI's words: a server that cannot be reached gets a hint
// of how to start or name one, and an error answer that is not the API's
// (a proxy's page) the code "http".
func clientText(err error) string {
	s := err.Error()
	if ue, ok := errors.AsType[*client.UnreachableError](err); ok {
		s = strings.Replace(s, ue.Error(), fmt.Sprintf("cannot reach the skein server at %s (start one with 'skein serve', or point --server or $SKEIN_SERVER at it): %v", ue.Server, ue.Err), 1)
	}
	if ae, ok := errors.AsType[*client.Error](err); ok && ae.Code == "" {
		s = strings.Replace(s, ae.Error(), fmt.Sprintf("%s (HTTP %d http)", ae.Message, ae.Status), 1)
	}
	return s
}

// localView makes a view read from a server look as one read from a
// local database: a JSON null decodes into a RawMessage as "null", where
// "no value" is empty.
func localView(v client.OutcomeView) client.OutcomeView {
	if string(v.Result) == "null" && v.Status != client.StatusCompleted {
		v.Result = nil
	}
	for i, o := range v.Outcomes {
		if string(o.Value) == "null" && o.Status != "ok" {
			v.Outcomes[i].Value = nil
		}
	}
	return v
}
