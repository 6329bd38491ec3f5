package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/host/internal/egress"
)

// The built-in HTTP activity: the host serves activity.HTTPActivity
// itself, making the request under the egress policy of Config.HTTPAllow,
// Config.HTTPTimeout, Config.HTTPMaxResponseBytes and Config.APIAddrs
// (internal/egress), at most Config.HTTPMaxConcurrentPerRun and
// Config.HTTPMaxConcurrent at once (httpslots.go; docs/activities.md).

// HTTPActivity is the name of the built-in HTTP activity.
//
// Deprecated: use activity.HTTPActivity.
const HTTPActivity = activity.HTTPActivity

// ReservedActivityPrefix starts the names of the host's built-in
// activities; RegisterActivity refuses names that start with it.
const ReservedActivityPrefix = "skein."

// Defaults of the HTTP activity's bounds (Config).
const (
	DefaultHTTPTimeout             = 30 * time.Second
	DefaultHTTPMaxResponseBytes    = 1 << 20
	DefaultHTTPMaxConcurrentPerRun = 16
	DefaultHTTPMaxConcurrent       = 256
)

func (c *Config) setHTTPDefaults() {
	if c.HTTPTimeout <= 0 {
		c.HTTPTimeout = DefaultHTTPTimeout
	}
	if c.HTTPMaxResponseBytes <= 0 {
		c.HTTPMaxResponseBytes = DefaultHTTPMaxResponseBytes
	}
	if c.HTTPMaxConcurrentPerRun <= 0 {
		c.HTTPMaxConcurrentPerRun = DefaultHTTPMaxConcurrentPerRun
	}
	if c.HTTPMaxConcurrent <= 0 {
		c.HTTPMaxConcurrent = DefaultHTTPMaxConcurrent
	}
	if c.APIName == "" {
		c.APIName = "the host's API"
	}
}

// HTTPResolver resolves a host name to IP addresses (Config.HTTPResolver);
// *net.Resolver is one.
type HTTPResolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// newHTTPClient makes the egress client of the HTTP activity from cfg.
func newHTTPClient(cfg *Config) (*egress.Client, error) {
	c, err := egress.New(egress.Policy{
		Allow:            cfg.HTTPAllow,
		Timeout:          cfg.HTTPTimeout,
		MaxResponseBytes: cfg.HTTPMaxResponseBytes,
		AllowSetting:     "Config.HTTPAllow" + hintSuffix(cfg.limitHint("HTTPAllow")),
		Resolver:         cfg.HTTPResolver,
		Own:              cfg.APIAddrs,
		OwnSetting:       fmt.Sprintf("the address and port %s listens on (Config.APIAddrs)", cfg.APIName),
	})
	if err != nil {
		if hint := cfg.limitHint("HTTPAllow"); hint != "" {
			return nil, fmt.Errorf("Config.HTTPAllow (%s): %w", hint, err)
		}
		return nil, fmt.Errorf("Config.HTTPAllow: %w", err)
	}
	return c, nil
}

// checkActivityName refuses a name RegisterActivity may not take.
func checkActivityName(name string) error {
	if strings.HasPrefix(name, ReservedActivityPrefix) {
		return fmt.Errorf("host: RegisterActivity(%q): names that start with %q are reserved for the host's built-in activities", name, ReservedActivityPrefix)
	}
	return nil
}

// builtinActivity returns the built-in activity of name, nil if none.
func (h *Host) builtinActivity(name string) activity.Func {
	if name == activity.HTTPActivity {
		return h.httpActivity
	}
	return nil
}

// httpActivity makes the request its input describes, once a request
// slot of its run and of the process is free (httpslots.go). A response
// of any status is its output; a request the policy denies, an input that
// is not a request (or whose URL or method does not parse) and a response
// over Config.HTTPMaxResponseBytes fail it without retries; a transport
// error or a timeout fails the attempt, which the call's retry policy may
// retry.
func (h *Host) httpActivity(ctx context.Context, input []byte) ([]byte, error) {
	var req activity.HTTPRequest
	if err := json.Unmarshal(input, &req); err != nil {
		return nil, activity.NonRetryable(fmt.Errorf("activity %q: input %.100q is not an HTTP request (abi/README.md): %w", activity.HTTPActivity, input, err))
	}
	info, _ := activity.InfoFrom(ctx)
	if info.Traceparent != "" {
		req.Header = withTraceparent(req.Header, info.Traceparent)
	}
	release, err := h.httpSlots.acquire(ctx, info.RunID)
	if err != nil {
		return nil, err
	}
	defer release()
	resp, err := h.http.Do(ctx, req)
	if err != nil {
		return nil, h.httpError(err)
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return nil, activity.NonRetryable(fmt.Errorf("activity %q: encode the response: %w", activity.HTTPActivity, err))
	}
	return out, nil
}

// withTraceparent is header with a traceparent header of the attempt's
// span (docs/observability.md), unless the workflow set one itself.
func withTraceparent(header map[string]string, tp string) map[string]string {
	for k := range header {
		if strings.EqualFold(k, "traceparent") {
			return header
		}
	}
	out := make(map[string]string, len(header)+1)
	for k, v := range header {
		out[k] = v
	}
	out["traceparent"] = tp
	return out
}

// httpError turns an error of the egress client into the activity's
// error: a limit's names the Config field and where it is set.
func (h *Host) httpError(err error) error {
	var denied *egress.DeniedError
	if errors.As(err, &denied) || errors.Is(err, egress.ErrBadRequest) {
		return activity.NonRetryable(err)
	}
	var le *egress.LimitError
	if !errors.As(err, &le) {
		return err
	}
	switch le.Field {
	case "Timeout":
		return h.cfg.limitError(le.What, "HTTPTimeout", h.cfg.HTTPTimeout.String())
	case "MaxResponseBytes":
		return activity.NonRetryable(h.cfg.limitError(le.What, "HTTPMaxResponseBytes", bytesValue(h.cfg.HTTPMaxResponseBytes)))
	}
	return err
}

// simActivity is the activity of name in the simulation, when
// Simulation.Activities has no fake of it: the registered one, or, for
// the HTTP activity, one that fails (a simulation makes no requests).
func (h *Host) simActivity(name string) activity.Func {
	if name == activity.HTTPActivity {
		return func(context.Context, []byte) ([]byte, error) {
			return nil, activity.NonRetryable(fmt.Errorf("activity %q makes no requests in a simulation; fake it in Simulation.Activities", activity.HTTPActivity))
		}
	}
	return h.activity(name)
}
