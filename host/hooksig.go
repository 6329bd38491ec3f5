package host

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skeinrun/skein/store"
)

// Webhook signatures: where a hook's secret comes from, and the two
// schemes a delivery may be signed with (docs/schedules.md,
// "Signatures").

// The signature schemes of a hook (HookOptions.Scheme).
const (
	// SchemeGitHub: SignatureHeader holds "sha256=" and the hex
	// HMAC-SHA256 of the body. It cannot bound replays: the same
	// delivery verifies forever.
	SchemeGitHub = "github"
	// SchemeTimestamped: TimestampedHeader holds "t=UNIX,v1=HEX", HEX the
	// hex HMAC-SHA256 of "{t}.{body}" (Stripe's construction). A delivery
	// is accepted within the hook's tolerance of its t, and once.
	SchemeTimestamped = "timestamped"
)

// SignatureHeader is the header of a delivery signed with SchemeGitHub.
const SignatureHeader = "X-Hub-Signature-256"

// TimestampedHeader is the header of a delivery signed with
// SchemeTimestamped.
const TimestampedHeader = "Skein-Signature"

// Bounds of a timestamped hook's tolerance window (HookOptions.Tolerance).
const (
	DefaultHookTolerance = 5 * time.Minute
	MinHookTolerance     = time.Second
	MaxHookTolerance     = time.Hour
)

// HookSecretEnvPrefix starts the name of every environment variable a
// hook may read its secret from (HookOptions.SecretEnv).
const HookSecretEnvPrefix = "SKEIN_HOOK_"

// ErrSignature: a delivery to a hook with a secret is not signed with it
// (or, timestamped, not within the hook's tolerance).
var ErrSignature = errors.New("the delivery's signature does not match the hook's secret")

// ErrStale: a timestamped delivery signed longer ago (or further ahead)
// than its hook's tolerance.
var ErrStale = errors.New("the delivery's time is outside the hook's tolerance window")

// ErrReplay: a timestamped delivery whose signature was accepted before,
// within its tolerance window.
var ErrReplay = errors.New("the delivery's signature was accepted before: a replayed delivery is refused (a sender that retries signs again, with a new t)")

// ErrHookSecret: the hook's secret cannot be read in this process: its
// variable is not set (or empty), its name is not in the hook secrets, or
// the hook predates the rule on secret variables (HookSecretEnvPrefix).
var ErrHookSecret = errors.New("the hook's secret is not available to this server")

// signedDelivery is what a verified delivery of a timestamped hook is
// remembered by until its record expires: the signature accepted.
type signedDelivery struct {
	id      string // hex of the signature; "" when the scheme remembers nothing
	expires time.Time
}

// hookSecret returns the secret of hk ("" for a hook without one).
func (h *Host) hookSecret(hk store.Hook) (string, error) {
	switch {
	case hk.Secret != "":
		if h.cfg.HookSecrets == nil {
			return "", fmt.Errorf("secret %q: this server has no hook secrets (skein serve --hook-secrets FILE): %w", hk.Secret, ErrHookSecret)
		}
		if v, ok := h.cfg.HookSecrets(hk.Secret); ok && v != "" {
			return v, nil
		}
		return "", fmt.Errorf("secret %q is not in the server's hook secrets (skein serve --hook-secrets FILE): %w", hk.Secret, ErrHookSecret)
	case hk.SecretEnv != "":
		if !secretEnvAllowed(hk.SecretEnv) {
			return "", fmt.Errorf("$%s is not a %s* variable, the only ones a hook may read: delete the hook and create it again with --secret-env %sNAME or --secret NAME: %w",
				hk.SecretEnv, HookSecretEnvPrefix, HookSecretEnvPrefix, ErrHookSecret)
		}
		if v := os.Getenv(hk.SecretEnv); v != "" {
			return v, nil
		}
		return "", fmt.Errorf("$%s is not set in the server's environment: %w", hk.SecretEnv, ErrHookSecret)
	}
	return "", nil
}

// secretEnvAllowed reports whether a hook may read its secret from the
// environment variable name.
func secretEnvAllowed(name string) bool {
	return len(name) > len(HookSecretEnvPrefix) && strings.HasPrefix(name, HookSecretEnvPrefix)
}

// verifyDelivery checks d's signature under hk's scheme and secret, in
// constant time, at now.
func verifyDelivery(hk store.Hook, secret string, d Delivery, now time.Time) (signedDelivery, error) {
	if hk.Scheme == SchemeTimestamped {
		return verifyTimestamped(hk, secret, d, now)
	}
	got := d.Header.Get(SignatureHeader)
	sig, err := hex.DecodeString(strings.TrimPrefix(got, "sha256="))
	if got == "" || !strings.HasPrefix(got, "sha256=") || err != nil {
		return signedDelivery{}, fmt.Errorf("%w: want header %s: sha256=HEX (HMAC-SHA256 of the body)", ErrSignature, SignatureHeader)
	}
	if !hmac.Equal(sig, mac(secret, d.Body)) {
		return signedDelivery{}, ErrSignature
	}
	return signedDelivery{}, nil
}

// verifyTimestamped checks a delivery of SchemeTimestamped: one of its
// v1 signatures (several during a rotation of secrets) is the HMAC of
// "{t}.{body}", and t is within the hook's tolerance of now, either way.
func verifyTimestamped(hk store.Hook, secret string, d Delivery, now time.Time) (signedDelivery, error) {
	t, sigs, ok := parseTimestamped(d.Header.Get(TimestampedHeader))
	if !ok {
		return signedDelivery{}, fmt.Errorf(`%w: want header %s: t=UNIX,v1=HEX (HEX: HMAC-SHA256 of "{t}.{body}", t the time of signing in unix seconds)`, ErrSignature, TimestampedHeader)
	}
	want := mac(secret, []byte(strconv.FormatInt(t, 10)+"."), d.Body)
	var matched []byte
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			matched = s
		}
	}
	if matched == nil {
		return signedDelivery{}, ErrSignature
	}
	tol := hookTolerance(hk)
	signed := time.Unix(t, 0)
	if off := now.Sub(signed); off > tol || off < -tol {
		return signedDelivery{}, fmt.Errorf("%w: it was signed at t=%d, %s from the server's clock; the hook accepts deliveries signed within %s of it (--tolerance)",
			ErrStale, t, off.Round(time.Second).Abs(), tol)
	}
	return signedDelivery{id: hex.EncodeToString(matched), expires: signed.Add(tol + time.Second)}, nil
}

// hookTolerance is a timestamped hook's tolerance window.
func hookTolerance(hk store.Hook) time.Duration {
	if hk.Tolerance <= 0 {
		return DefaultHookTolerance
	}
	return hk.Tolerance
}

// maxSignatures bounds the v1 values of a TimestampedHeader looked at.
const maxSignatures = 8

// parseTimestamped reads "t=UNIX,v1=HEX[,v1=HEX…]"; other keys (a v0, a
// scheme to come) are ignored.
func parseTimestamped(v string) (t int64, sigs [][]byte, ok bool) {
	seenT := false
	for part := range strings.SplitSeq(v, ",") {
		k, val, found := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !found:
			return 0, nil, false
		case k == "t" && !seenT:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n <= 0 || len(val) > 12 {
				return 0, nil, false
			}
			t, seenT = n, true
		case k == "v1" && len(sigs) < maxSignatures:
			b, err := hex.DecodeString(val)
			if err != nil || len(b) != sha256.Size {
				return 0, nil, false
			}
			sigs = append(sigs, b)
		}
	}
	return t, sigs, seenT && len(sigs) > 0
}

// mac is the HMAC-SHA256 under secret of the parts of a message, one
// after the other.
func mac(secret string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}
