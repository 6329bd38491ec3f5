package host

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/skeinrun/skein/store"
)

// TestCredentialHeader: the rule that leaves headers out of a hook run's
// input, on the headers of the webhook senders people use.
func TestCredentialHeader(t *testing.T) {
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "X-Gitlab-Token",
		"X-Auth-Token", "X-Auth-User", "X-Hub-Signature", "X-Hub-Signature-256", "Skein-Signature", "Stripe-Signature",
		"X-Slack-Signature", "X-Shopify-Hmac-Sha256", "X-Amz-Security-Token", "X-Csrf-Token", "X-Session-Id",
		"X-Client-Secret", "X-Password", "X-Jwt-Assertion", "x-api-key"} {
		if !CredentialHeader(h) {
			t.Errorf("%s is not taken for a credential", h)
		}
	}
	for _, h := range []string{"Idempotency-Key", "idempotency-key", "Content-Type", "User-Agent", "X-Github-Event", "X-Github-Delivery",
		"X-Gitlab-Event", "Keep-Alive", "X-Request-Id", "X-Forwarded-For", "Accept"} {
		if CredentialHeader(h) {
			t.Errorf("%s is taken for a credential", h)
		}
	}
}

// TestVerifyTimestamped: the forms of a Skein-Signature header, and the
// tolerance window on both sides.
func TestVerifyTimestamped(t *testing.T) {
	hk := store.Hook{Name: "h", Scheme: SchemeTimestamped, Tolerance: time.Minute}
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"a":1}`)
	v1 := func(secret string, ts int64) string {
		return "v1=" + hexMAC(secret, strconv.FormatInt(ts, 10)+"."+string(body))
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, c := range []struct {
		header string
		ok     bool
	}{
		{"t=" + ts + "," + v1("s", now.Unix()), true},
		{v1("s", now.Unix()) + ",t=" + ts, true},                                    // any order
		{"t=" + ts + "," + v1("old", now.Unix()) + "," + v1("s", now.Unix()), true}, // a rotation: one of them matches
		{"t=" + ts + ",v0=zz," + v1("s", now.Unix()), true},                         // other keys are ignored
		{"t=" + ts + ", " + v1("s", now.Unix()), true},                              // spaces
		{"t=" + ts + "," + v1("x", now.Unix()), false},
		{"t=" + ts, false},
		{v1("s", now.Unix()), false},
		{"t=" + ts + ",v1=abc", false},
		{"t=-5," + v1("s", -5), false},
		{"t=" + ts + "," + v1("s", now.Unix()) + ",junk", false},
		{"", false},
		{"t=" + strconv.FormatInt(now.Unix()-61, 10) + "," + v1("s", now.Unix()-61), false},
		{"t=" + strconv.FormatInt(now.Unix()+61, 10) + "," + v1("s", now.Unix()+61), false},
		{"t=" + strconv.FormatInt(now.Unix()-59, 10) + "," + v1("s", now.Unix()-59), true},
	} {
		sd, err := verifyDelivery(hk, "s", Delivery{Header: http.Header{TimestampedHeader: {c.header}}, Body: body}, now)
		if c.ok != (err == nil) || c.ok && (len(sd.id) != 64 || sd.expires.Before(now)) {
			t.Errorf("%q: %+v, %v; want ok %v", c.header, sd, err, c.ok)
		}
	}
}

// hexMAC is the hex HMAC-SHA256 of msg under secret.
func hexMAC(secret, msg string) string {
	return hex.EncodeToString(mac(secret, []byte(msg)))
}
