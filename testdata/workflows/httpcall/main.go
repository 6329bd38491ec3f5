// Command httpcall holds workflows that call the built-in HTTP activity
// (skein.HTTP), for the HTTP activity's tests in host and cmd/skein.
package main

import (
	"fmt"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type fetchIn struct {
	Req  skein.HTTPRequest `json:"req"`
	Max  int               `json:"max"`  // retry attempts; 0: no retry policy
	Wait bool              `json:"wait"` // wait on the promise "go" after the call
}

type fetchOut struct {
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	XTest  string `json:"x_test,omitempty"` // the response's X-Test header
	Err    string `json:"err,omitempty"`    // the op's error
}

// fetch makes the request and returns what it got, or the op's error as
// its result (so tests read the exact text).
func fetch(ctx *skein.Context, in fetchIn) (fetchOut, error) {
	var opts []skein.Option
	if in.Max > 0 {
		opts = append(opts, skein.Retry(skein.RetryPolicy{MaxAttempts: in.Max, InitialBackoff: time.Millisecond}))
	}
	resp, err := skein.HTTP(ctx, in.Req, opts...).Get(ctx)
	if in.Wait {
		if _, werr := skein.Promise[string](ctx, skein.ID("go")).Get(ctx); werr != nil {
			return fetchOut{}, werr
		}
	}
	if err != nil {
		return fetchOut{Err: err.Error()}, nil
	}
	return fetchOut{Status: resp.Status, Body: string(resp.Body), XTest: resp.Header["X-Test"]}, nil
}

type fanoutIn struct {
	URL string `json:"url"` // each call gets "?i=N" appended
	N   int    `json:"n"`   // calls made at once
}

type fanoutOut struct {
	OK  int    `json:"ok"`            // calls that got a response
	Err string `json:"err,omitempty"` // the first op error, if any
}

// fanout starts N calls at once, then waits for them all.
func fanout(ctx *skein.Context, in fanoutIn) (fanoutOut, error) {
	calls := make([]skein.Future[skein.HTTPResponse], in.N)
	for i := range calls {
		calls[i] = skein.HTTP(ctx, skein.HTTPRequest{URL: fmt.Sprintf("%s?i=%d", in.URL, i)})
	}
	var out fanoutOut
	for _, c := range calls {
		if _, err := c.Get(ctx); err != nil {
			if out.Err == "" {
				out.Err = err.Error()
			}
			continue
		}
		out.OK++
	}
	return out, nil
}

func main() {
	skein.Register("fetch", fetch)
	skein.Register("fanout", fanout)
	skein.Main()
}
