// Package worker serves activities to the runs of a skein server from
// another process: a Worker claims the activity tasks of the names
// registered on it over the server's worker protocol (docs/api.md,
// "Activity workers", through package client), runs each under a lease
// kept by heartbeats, and reports its result or error. It speaks the
// worker stream (tasks pushed, ends and heartbeats in batches), and the
// four JSON calls with a server that has no stream. It does not import
// the host (nor wazero).
//
//	w, _ := worker.New(worker.Options{Server: "http://127.0.0.1:8080"})
//	w.Register("charge", activity.Typed(func(ctx context.Context, o Order) (Receipt, error) { … }))
//	err := w.Run(ctx)
package worker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/client"
)

// Options configures a Worker.
type Options struct {
	// Server is the base URL of the skein server, "http://127.0.0.1:8080".
	Server string
	// Token is the server's API token (skein serve --token) or an API
	// key's secret (a worker key: skein key create --role worker), if the
	// server requires one.
	Token string
	// Namespace is the namespace a root token works in (X-Skein-Namespace);
	// a key of another role works in its own, and may leave it empty.
	Namespace string
	// Identity names this worker in the server's records (which worker
	// holds a task); default "{hostname}-{pid}-{random}". Live workers
	// must have different identities.
	Identity string
	// Concurrency is how many tasks the worker runs at once; default 16.
	Concurrency int
	// Pollers is how many claims the worker keeps waiting on the server
	// at once, each for up to the free slots; default 2 (one answered
	// claim is not left without a successor while it starts its tasks).
	Pollers int
	// Wait is how long one claim waits for a task on the server (a long
	// poll); default 20s. The server caps it (--max-claim-wait).
	Wait time.Duration
	// JSONCalls makes the worker use the four JSON calls (claim,
	// heartbeat, complete, fail) instead of the worker stream. Without it
	// the worker uses the stream, and the JSON calls only with a server
	// that has no stream (it answers 404).
	JSONCalls bool
	// HTTPClient sends the requests; default a client with keep-alive
	// connections for Concurrency tasks.
	HTTPClient *http.Client
	// Logger receives the worker's logs; default slog.Default().
	Logger *slog.Logger
}

// Worker claims and runs activity tasks. Create it with New, register its
// activities, then call Run.
type Worker struct {
	o     Options
	c     *client.Client
	log   *slog.Logger
	mu    sync.Mutex
	funcs map[string]activity.Func
}

// New returns a worker for o.Server.
func New(o Options) (*Worker, error) {
	if o.Identity == "" {
		o.Identity = defaultIdentity()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Pollers <= 0 {
		o.Pollers = 2
	}
	o.Pollers = min(o.Pollers, o.Concurrency)
	if o.Wait <= 0 {
		o.Wait = 20 * time.Second
	}
	if o.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.Concurrency + 4
		o.HTTPClient = &http.Client{Transport: t}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c, err := client.New(o.Server, client.WithToken(o.Token), client.WithNamespace(o.Namespace), client.WithHTTPClient(o.HTTPClient))
	if err != nil {
		return nil, fmt.Errorf("worker: Options.Server %q is not an http:// or https:// URL", o.Server)
	}
	return &Worker{o: o, c: c, log: o.Logger, funcs: map[string]activity.Func{}}, nil
}

// Identity returns the name the worker claims tasks under.
func (w *Worker) Identity() string { return w.o.Identity }

// Register makes fn serve the activity name (what workflows pass to
// skein.Call). Its context carries the call's activity.Info. It panics on an empty name, a nil fn or a name registered
// twice: those are mistakes in the program, like http.ServeMux's.
func (w *Worker) Register(name string, fn activity.Func) {
	if name == "" || fn == nil {
		panic("worker: Register needs a name and a function")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.funcs[name]; dup {
		panic(fmt.Sprintf("worker: activity %q registered twice", name))
	}
	w.funcs[name] = fn
}

func (w *Worker) names() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.funcs))
	for n := range w.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (w *Worker) fn(name string) activity.Func {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.funcs[name]
}

func defaultIdentity() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ErrStopping is the error an attempt reports when the worker stopped
// before it finished: the server queues the next attempt.
var ErrStopping = errors.New("the worker stopped before the attempt finished")

// StatusError is an error answer of the server: a *client.Error, with
// its HTTP status and the API's code and message.
type StatusError = client.Error
