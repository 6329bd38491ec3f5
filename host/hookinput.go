package host

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/skeinrun/skein/store"
)

// The input of a hook's run: the request, without its credentials
// (docs/schedules.md, "The run's input").

// HookInput is the input of a hook's run: the request (docs/schedules.md).
type HookInput struct {
	Hook    string              `json:"hook"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   map[string][]string `json:"query"`
	Headers map[string][]string `json:"headers"` // without credential-looking ones (CredentialHeader)
	// DroppedHeaders names the headers left out, sorted.
	DroppedHeaders []string `json:"dropped_headers,omitempty"`
	// Body is the body as text when it is UTF-8; otherwise BodyBase64
	// holds it. JSON is the body again when it is a JSON value.
	Body       string          `json:"body"`
	BodyBase64 string          `json:"body_base64,omitempty"`
	JSON       json.RawMessage `json:"json,omitempty"`
}

// credentialWords: a header whose name holds one of these (in any case)
// looks like a credential.
var credentialWords = []string{"auth", "cookie", "token", "secret", "key", "signature", "hmac", "session",
	"password", "passwd", "passphrase", "credential", "csrf", "xsrf", "jwt"}

// CredentialHeader reports whether a request header looks like a
// credential, and so is left out of a hook run's input unless the hook
// keeps it (HookOptions.KeepHeaders): its name holds auth, cookie, token,
// secret, key, signature, hmac, session, password, passwd, passphrase,
// credential, csrf, xsrf or jwt, in any case (Authorization, Cookie,
// X-Api-Key, X-Gitlab-Token, X-Auth-User, X-Hub-Signature-256, …).
// Idempotency-Key, which names the delivery, is kept.
func CredentialHeader(name string) bool {
	if strings.EqualFold(name, IdempotencyHeader) {
		return false
	}
	l := strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// maxKeepHeaders bounds HookOptions.KeepHeaders.
const maxKeepHeaders = 32

// keepHeaders checks and canonicalizes the headers a hook keeps.
func keepHeaders(names []string) ([]string, error) {
	if len(names) > maxKeepHeaders {
		return nil, fmt.Errorf("%d headers to keep: at most %d: %w", len(names), maxKeepHeaders, ErrInvalid)
	}
	var out []string
	for _, n := range names {
		if n == "" || len(n) > 128 || strings.IndexFunc(n, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			return nil, fmt.Errorf("header to keep %q: want a header name of 1 to 128 letters, digits, - and _: %w", n, ErrInvalid)
		}
		if c := textproto.CanonicalMIMEHeaderKey(n); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out, nil
}

// hookInput is the run input of a delivery to hk.
func hookInput(hk store.Hook, d Delivery) HookInput {
	in := HookInput{Hook: hk.Name, Method: d.Method, Path: d.Path, Query: map[string][]string(d.Query), Headers: map[string][]string{}}
	if in.Query == nil {
		in.Query = map[string][]string{}
	}
	for k, v := range d.Header {
		if CredentialHeader(k) && !slices.Contains(hk.KeepHeaders, textproto.CanonicalMIMEHeaderKey(k)) {
			in.DroppedHeaders = append(in.DroppedHeaders, k)
			continue
		}
		in.Headers[k] = v
	}
	slices.Sort(in.DroppedHeaders)
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

// inputBody returns the body a hook run's input holds; false when the
// input is not a hook's.
func inputBody(input []byte) ([]byte, bool) {
	var in HookInput
	if err := json.Unmarshal(input, &in); err != nil || in.Hook == "" {
		return nil, false
	}
	if in.BodyBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(in.BodyBase64)
		return b, err == nil
	}
	return []byte(in.Body), true
}
