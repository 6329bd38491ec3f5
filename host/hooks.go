package host

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/skeinrun/skein/store"
)

// Webhooks: an HTTP request to a hook's endpoint starts a run of the
// hook's workflow with the request as its input (docs/schedules.md).

// SignatureHeader is the header of a signed delivery: "sha256=" and the
// hex HMAC-SHA256 of the body under the hook's secret (GitHub's scheme).
const SignatureHeader = "X-Hub-Signature-256"

// IdempotencyHeader is the header whose value names a delivery: the
// same value again starts nothing new (HookRunID).
const IdempotencyHeader = "Idempotency-Key"

// ErrSignature: a delivery to a hook with a secret is not signed with it.
var ErrSignature = errors.New("the delivery's signature does not match the hook's secret")

// ErrHookSecret: the environment variable that holds a hook's secret is
// not set (or empty) in this process.
var ErrHookSecret = errors.New("the hook's secret is not set in the server's environment")

// HookOptions define a hook.
type HookOptions struct {
	Name     string // letters, digits, - and _; at most MaxScheduleNameLen
	Module   string // module name or hash; a name starts its newest module
	Workflow string // default: the module's only workflow
	// SecretEnv names the environment variable that holds the HMAC
	// secret deliveries are signed with; it must be set where the hook
	// is created and where deliveries arrive. Empty: deliveries are not
	// checked.
	SecretEnv string
}

// Delivery is one HTTP request to a hook.
type Delivery struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// HookInput is the input of a hook's run: the request (docs/schedules.md).
type HookInput struct {
	Hook    string              `json:"hook"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   map[string][]string `json:"query"`
	Headers map[string][]string `json:"headers"` // without Authorization, Cookie and Proxy-Authorization
	// Body is the body as text when it is UTF-8; otherwise BodyBase64
	// holds it. JSON is the body again when it is a JSON value.
	Body       string          `json:"body"`
	BodyBase64 string          `json:"body_base64,omitempty"`
	JSON       json.RawMessage `json:"json,omitempty"`
}

// droppedHeaders are left out of a hook run's input: credentials have no
// place in the store.
var droppedHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// HookRunID returns the id of the run a delivery with an idempotency key
// starts: "hook:{name}:{first 32 hex digits of sha256(key)}".
func HookRunID(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	return "hook:" + name + ":" + hex.EncodeToString(sum[:16])
}

// CreateHook stores a hook. A hook of the same name existing fails with
// ErrConflict.
func (h *Host) CreateHook(ctx context.Context, o HookOptions) (store.Hook, error) {
	if err := validName("hook", o.Name); err != nil {
		return store.Hook{}, fmt.Errorf("create hook: %w", err)
	}
	if o.SecretEnv != "" {
		if v, ok := os.LookupEnv(o.SecretEnv); !ok || v == "" {
			return store.Hook{}, fmt.Errorf("create hook %s: secret variable $%s is not set in the server's environment: %w", o.Name, o.SecretEnv, ErrInvalid)
		}
	}
	wf, err := h.workflowOf(ctx, o.Module, o.Workflow)
	if err != nil {
		return store.Hook{}, fmt.Errorf("create hook %s: %w", o.Name, err)
	}
	hk, err := h.cfg.Store.CreateHook(ctx, store.Hook{Name: o.Name, Module: o.Module, Workflow: wf, SecretEnv: o.SecretEnv})
	if err != nil {
		return store.Hook{}, fmt.Errorf("create hook: %w", err)
	}
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
// fails with ErrSignature (or ErrHookSecret) having stored nothing. With
// an Idempotency-Key header the run's id is HookRunID: a delivery with a
// key seen before returns the existing run (created false), whatever its
// body. Without one, the id is "hook:{name}:{random}".
func (h *Host) Deliver(ctx context.Context, name string, d Delivery) (store.Run, bool, error) {
	hk, err := h.cfg.Store.Hook(ctx, name)
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %q: %w", name, err)
	}
	if err := checkSignature(hk, d); err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: %w", name, err)
	}
	id := "hook:" + name + ":" + randomHex(16)
	if key := d.Header.Get(IdempotencyHeader); key != "" {
		id = HookRunID(name, key)
	}
	if r, err := h.cfg.Store.Run(ctx, id); err == nil {
		return r, false, nil
	}
	input, err := json.Marshal(hookInput(name, d))
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: encode the input: %w", name, err)
	}
	if len(input) > h.cfg.MaxPayloadBytes {
		return store.Run{}, false, fmt.Errorf("hook %s: %w: %w", name, h.payloadError("the delivery's input", len(input)), ErrInvalid)
	}
	m, err := h.moduleInfo(ctx, hk.Module)
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: module %q: %w", name, hk.Module, err)
	}
	if err := checkInput(m, hk.Workflow, input); err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: %w", name, err)
	}
	r, created, err := h.newRun(ctx, store.Run{ID: id, ModuleHash: m.Hash, Workflow: hk.Workflow, Input: input})
	if err != nil {
		return store.Run{}, false, fmt.Errorf("hook %s: start %s: %w", name, id, err)
	}
	if created {
		h.signal()
	}
	return r, created, nil
}

// checkSignature checks a delivery's SignatureHeader against the hook's
// secret, in constant time.
func checkSignature(hk store.Hook, d Delivery) error {
	if hk.SecretEnv == "" {
		return nil
	}
	secret := os.Getenv(hk.SecretEnv)
	if secret == "" {
		return fmt.Errorf("$%s: %w", hk.SecretEnv, ErrHookSecret)
	}
	got := d.Header.Get(SignatureHeader)
	sig, err := hex.DecodeString(strings.TrimPrefix(got, "sha256="))
	if got == "" || !strings.HasPrefix(got, "sha256=") || err != nil {
		return fmt.Errorf("%w: want header %s: sha256=HEX (HMAC-SHA256 of the body)", ErrSignature, SignatureHeader)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(d.Body)
	if !hmac.Equal(sig, mac.Sum(nil)) {
		return ErrSignature
	}
	return nil
}

// hookInput is the run input of a delivery.
func hookInput(name string, d Delivery) HookInput {
	in := HookInput{Hook: name, Method: d.Method, Path: d.Path, Query: map[string][]string(d.Query), Headers: map[string][]string{}}
	if in.Query == nil {
		in.Query = map[string][]string{}
	}
	for k, v := range d.Header {
		in.Headers[k] = v
	}
	for _, k := range droppedHeaders {
		delete(in.Headers, k)
	}
	if utf8.Valid(d.Body) {
		in.Body = string(d.Body)
	} else {
		in.BodyBase64 = base64.StdEncoding.EncodeToString(d.Body)
	}
	if len(d.Body) > 0 && json.Valid(d.Body) {
		in.JSON = json.RawMessage(d.Body)
	}
	return in
}

func randomHex(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}
