package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/skeinrun/skein/internal/runjson"
	"github.com/skeinrun/skein/server"
	"github.com/skeinrun/skein/store"
)

// defaultServer is where the client commands look for `skein serve`.
const defaultServer = "http://127.0.0.1:7070"

// serverFlags are the flags every client command shares.
type serverFlags struct {
	url, token *string
}

func addServerFlags(fs *flag.FlagSet) *serverFlags {
	// The defaults come from the environment when the flags are read, so
	// that --help never prints a token.
	return &serverFlags{
		url:   fs.String("server", "", "URL of a skein server (default $SKEIN_SERVER, else "+defaultServer+")"),
		token: fs.String("token", "", "bearer token of the server (default $SKEIN_TOKEN)"),
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

func (f *serverFlags) client() (*apiClient, error) {
	base := cmp.Or(*f.url, os.Getenv("SKEIN_SERVER"), defaultServer)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("server %q is not an http:// or https:// URL", base)}
	}
	token := cmp.Or(*f.token, os.Getenv("SKEIN_TOKEN"))
	return &apiClient{base: strings.TrimRight(base, "/"), token: token, hc: &http.Client{Timeout: 5 * time.Minute}}, nil
}

// apiClient calls the HTTP API of `skein serve` (docs/api.md).
type apiClient struct {
	base, token string
	hc          *http.Client
}

// apiError is an error answer of the server.
type apiError struct {
	Status        int
	Code, Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s (HTTP %d %s)", e.Message, e.Status, e.Code)
}

// do sends a request and decodes a 2xx answer into out (if not nil). It
// returns the status code; an error answer comes back as *apiError.
func (c *apiClient) do(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string, out any) (int, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return 0, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if contentType == "application/wasm" {
		// A server that refuses the upload (too large, no token) answers
		// before the module is sent.
		req.Header.Set("Expect", "100-continue")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("cannot reach the skein server at %s (start one with 'skein serve', or point --server or $SKEIN_SERVER at it): %w", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var eb server.ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			return resp.StatusCode, &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
		}
		return resp.StatusCode, &apiError{Status: resp.StatusCode, Code: "http", Message: fmt.Sprintf("%s %s: %s", method, path, strings.TrimSpace(string(data)))}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: the answer is not what skein serve sends: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

func (c *apiClient) doJSON(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	return c.do(ctx, method, path, nil, body, ct, out)
}

func (c *apiClient) deploy(ctx context.Context, name string, wasm []byte) (server.Module, bool, error) {
	var m server.Module
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	code, err := c.do(ctx, http.MethodPost, "/v1/modules", q, bytes.NewReader(wasm), "application/wasm", &m)
	return m, code == http.StatusCreated, err
}

func (c *apiClient) start(ctx context.Context, req server.StartRequest) (server.Run, bool, error) {
	var r server.Run
	code, err := c.doJSON(ctx, http.MethodPost, "/v1/runs", req, &r)
	return r, code == http.StatusCreated, err
}

func (c *apiClient) run(ctx context.Context, id string) (server.Run, error) {
	var r server.Run
	_, err := c.doJSON(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, &r)
	return r, err
}

func (c *apiClient) outcomes(ctx context.Context, id string) (runjson.View, error) {
	var v runjson.View
	_, err := c.doJSON(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id)+"/outcomes", nil, &v)
	// A JSON null decodes into a RawMessage as "null": make "no value"
	// look as it does when read from a local database.
	if string(v.Result) == "null" && v.Status != string(store.RunCompleted) {
		v.Result = nil
	}
	for i, o := range v.Outcomes {
		if string(o.Value) == "null" && o.Status != string(store.OutcomeOK) {
			v.Outcomes[i].Value = nil
		}
	}
	return v, err
}

func (c *apiClient) cancel(ctx context.Context, id, reason string) (server.Run, error) {
	var r server.Run
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/cancel", server.CancelRequest{Reason: reason}, &r)
	return r, err
}

func (c *apiClient) resolve(ctx context.Context, promise string, req server.ResolveRequest) (server.Resolved, error) {
	var r server.Resolved
	_, err := c.doJSON(ctx, http.MethodPost, "/v1/promises/"+url.PathEscape(promise), req, &r)
	return r, err
}
