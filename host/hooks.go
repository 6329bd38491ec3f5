package host

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/skeinrun/skein/store"
)

// Webhooks: an HTTP request to a hook's endpoint starts a run of the
// hook's workflow with the request as its input (docs/schedules.md).
// hooksig.go checks signatures, hookinput.go makes the run's input.

// IdempotencyHeader is the header whose value names a delivery: the
// same value again, with the same body, starts nothing new (HookRunID).
const IdempotencyHeader = "Idempotency-Key"

// ErrIdempotencyKey: a delivery's Idempotency-Key was first used by a
// delivery with another body.
var ErrIdempotencyKey = errors.New("the delivery's Idempotency-Key was first used by a delivery with another body: a key names one delivery, so a new delivery needs a new key")

// HookOptions define a hook.
type HookOptions struct {
	Name     string // letters, digits, - and _; at most MaxScheduleNameLen
	Module   string // module name or hash; a name starts the module it points at
	Workflow string // default: the module's only workflow
	// SecretEnv names the environment variable that holds the HMAC
	// secret deliveries are signed with: HookSecretEnvPrefix and a name,
	// set where the hook is created and where deliveries arrive. Secret
	// names the secret in Config.HookSecrets instead. Both empty:
	// deliveries are not checked.
	SecretEnv string
	Secret    string
	// Scheme is how deliveries are signed: SchemeGitHub (the default) or
	// SchemeTimestamped. It needs a secret.
	Scheme string
	// Tolerance is, for SchemeTimestamped, how far a delivery's time may
	// be from the server's: MinHookTolerance to MaxHookTolerance, default
	// DefaultHookTolerance.
	Tolerance time.Duration
	// KeepHeaders are credential-looking headers (CredentialHeader) the
	// run's input keeps all the same; at most 32.
	KeepHeaders []string
}

// Delivery is one HTTP request to a hook.
type Delivery struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// HookRunID returns the id of the run a delivery with an idempotency key
// to the hook of qualified name starts: "hook:{name}:{first 32 hex
// digits of sha256(key)}" in the hook's namespace.
func HookRunID(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	return store.HookRunIDPrefix(name) + hex.EncodeToString(sum[:16])
}

// CreateHook stores a hook. A hook of the same name existing fails with
// ErrConflict; bad options with ErrInvalid, naming the rule.
func (h *Host) CreateHook(ctx context.Context, o HookOptions) (store.Hook, error) {
	hk, err := h.newHook(o)
	if err != nil {
		return store.Hook{}, fmt.Errorf("create hook: %w", err)
	}
	if hk.Workflow, err = h.workflowOf(ctx, o.Module, o.Workflow); err != nil {
		return store.Hook{}, fmt.Errorf("create hook %s: %w", o.Name, err)
	}
	hk, err = h.cfg.Store.CreateHook(ctx, hk)
	if err != nil {
		return store.Hook{}, fmt.Errorf("create hook: %w", err)
	}
	return hk, nil
}

// newHook checks o (but for its module and workflow) and returns the
// hook to store.
func (h *Host) newHook(o HookOptions) (store.Hook, error) {
	if err := validName("hook", o.Name); err != nil {
		return store.Hook{}, err
	}
	hk := store.Hook{Name: o.Name, Module: o.Module, SecretEnv: o.SecretEnv, Secret: o.Secret}
	switch {
	case o.SecretEnv != "" && o.Secret != "":
		return store.Hook{}, invalidf("hook %s: give its secret's variable or its name in the hook secrets, not both", o.Name)
	case o.SecretEnv != "" && !secretEnvAllowed(o.SecretEnv):
		return store.Hook{}, invalidf("hook %s: secret variable $%s: a hook's secret variable must be named %sNAME, so that no client can have the server check signatures with its other variables (and so confirm guesses of their values); or name a secret of the server's hook secrets file (skein serve --hook-secrets FILE; --secret NAME)",
			o.Name, o.SecretEnv, HookSecretEnvPrefix)
	}
	if _, err := h.hookSecret(hk); err != nil {
		return store.Hook{}, invalidf("hook %s: %w", o.Name, err)
	}
	signed := o.SecretEnv != "" || o.Secret != ""
	switch o.Scheme {
	case "", SchemeGitHub, SchemeTimestamped:
		if o.Scheme != "" && !signed {
			return store.Hook{}, invalidf("hook %s: scheme %s checks signatures: give the hook a secret (--secret-env or --secret)", o.Name, o.Scheme)
		}
	default:
		return store.Hook{}, invalidf("hook %s: scheme %q: want %s or %s", o.Name, o.Scheme, SchemeGitHub, SchemeTimestamped)
	}
	if signed {
		hk.Scheme = cmp.Or(o.Scheme, SchemeGitHub)
	}
	switch {
	case o.Tolerance != 0 && hk.Scheme != SchemeTimestamped:
		return store.Hook{}, invalidf("hook %s: a tolerance applies to the %s scheme only", o.Name, SchemeTimestamped)
	case o.Tolerance != 0 && (o.Tolerance < MinHookTolerance || o.Tolerance > MaxHookTolerance):
		return store.Hook{}, invalidf("hook %s: tolerance %s: want %s to %s", o.Name, o.Tolerance, MinHookTolerance, MaxHookTolerance)
	case hk.Scheme == SchemeTimestamped:
		hk.Tolerance = cmp.Or(o.Tolerance, DefaultHookTolerance)
	}
	keep, err := keepHeaders(o.KeepHeaders)
	if err != nil {
		return store.Hook{}, fmt.Errorf("hook %s: %w", o.Name, err)
	}
	hk.KeepHeaders = keep
	return hk, nil
}

// Hook returns one hook.
func (h *Host) Hook(ctx context.Context, name string) (store.Hook, error) {
	return h.cfg.Store.Hook(ctx, name)
}

// Hooks lists every hook by name.
func (h *Host) Hooks(ctx context.Context) ([]store.Hook, error) { return h.cfg.Store.Hooks(ctx) }

// DeleteHook deletes a hook; the runs it started stay.
func (h *Host) DeleteHook(ctx context.Context, name string) error {
	return h.cfg.Store.DeleteHook(ctx, name)
}

// Deliver starts the run of a delivery to hook name and reports whether
// it created it. A hook with a secret checks the signature first and
// fails with ErrSignature, ErrStale (a timestamped delivery outside its
// tolerance) or ErrHookSecret having stored nothing; a timestamped one
// then claims the signature in the store and fails with
// ErrReplay if it was accepted before. With an Idempotency-Key header
// the run's id is HookRunID: a delivery with a key seen before returns
// the existing run (created false) when its body is the first one's, and
// fails with ErrIdempotencyKey otherwise. Without one, the id is
// "hook:{name}:{random}".
func (h *Host) Deliver(ctx context.Context, name string, d Delivery) (store.Run, bool, error) {
	hk, err := h.cfg.Store.Hook(ctx, name)
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %q: %w", name, err)
	}
	sd, err := h.acceptDelivery(ctx, hk, d)
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: %w", name, err)
	}
	r, created, err := h.startDelivery(ctx, hk, d)
	if err != nil && sd.id != "" {
		// Nothing started: the sender may deliver the same request again.
		if rerr := h.cfg.Store.ReleaseDelivery(context.WithoutCancel(ctx), name, sd.id); rerr != nil {
			h.log.Warn("hook delivery: cannot release the signature of a delivery that started nothing; its sender must sign it again", "hook", name, "err", rerr)
		}
	}
	return r, created, err
}

// acceptDelivery checks a delivery's signature, if its hook has a
// secret, and claims a timestamped one in the store (ErrReplay: it was
// claimed before).
func (h *Host) acceptDelivery(ctx context.Context, hk store.Hook, d Delivery) (signedDelivery, error) {
	secret, err := h.hookSecret(hk)
	if err != nil || secret == "" {
		return signedDelivery{}, err
	}
	now := time.Now()
	sd, err := verifyDelivery(hk, secret, d, now)
	if err != nil || sd.id == "" {
		return sd, err
	}
	claimed, err := h.cfg.Store.ClaimDelivery(ctx, hk.Name, sd.id, now.UnixNano(), sd.expires.UnixNano())
	if err != nil {
		return signedDelivery{}, err
	}
	if !claimed {
		return signedDelivery{}, ErrReplay
	}
	return sd, nil
}

// startDelivery starts (or finds, by its Idempotency-Key) the run of an
// accepted delivery.
func (h *Host) startDelivery(ctx context.Context, hk store.Hook, d Delivery) (store.Run, bool, error) {
	name := hk.Name
	key := d.Header.Get(IdempotencyHeader)
	id := store.HookRunIDPrefix(name) + randomHex(16)
	if key != "" {
		id = HookRunID(name, key)
		if r, err := h.cfg.Store.Run(ctx, id); err == nil {
			return r, false, sameDelivery(name, r, d.Body)
		}
	}
	input, err := json.Marshal(hookInput(hk, d))
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: encode the input: %w", name, err)
	}
	if len(input) > h.cfg.MaxPayloadBytes {
		return store.Run{}, false, invalidf("hook %s: %w", name, h.payloadError("the delivery's input", len(input)))
	}
	m, err := h.modules.Info(ctx, hk.Module)
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: module %q: %w", name, hk.Module, err)
	}
	if err := checkInput(m, hk.Workflow, input); err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: %w", name, err)
	}
	r, created, err := h.newRun(ctx, store.Run{ID: id, ModuleHash: m.Hash, Workflow: hk.Workflow, Input: input,
		TraceParent: validTraceparent(d.Header.Get("Traceparent"))})
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: start %s: %w", name, id, err)
	}
	if !created { // a delivery with the same key came first
		return r, false, sameDelivery(name, r, d.Body)
	}
	h.signal()
	return r, true, nil
}

// sameDelivery checks that run r, found by a delivery's Idempotency-Key,
// was started by a delivery of the same body: a key is bound to the body
// of the first delivery that used it.
func sameDelivery(hook string, r store.Run, body []byte) error {
	if first, ok := inputBody(r.Input); !ok || !bytes.Equal(first, body) {
		return fmt.Errorf("hook %s: run %s: %w", hook, r.ID, ErrIdempotencyKey)
	}
	return nil
}

// warnHookSecrets logs, once at the start of Work, each hook whose
// secret this process cannot read: its deliveries are refused until it is
// set, or, for a hook whose variable predates HookSecretEnvPrefix, until
// the hook is created anew.
func (h *Host) warnHookSecrets(ctx context.Context) {
	hks, err := h.cfg.Store.Hooks(ctx)
	if err != nil {
		return // the scheduler reports a store that cannot be read
	}
	for _, hk := range hks {
		if _, err := h.hookSecret(hk); err != nil {
			h.log.Warn("hooks: the deliveries of this hook are refused (503)", "hook", hk.Name, "err", err)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}
