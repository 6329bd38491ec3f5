// Command worker serves the activities of examples/order to a skein
// server: reserve-stock, release-stock and charge. It keeps its stock in
// memory and prints one line per attempt it runs ("charge o-1 attempt 1"),
// so that a test, or a reader, can count them. With --webhook ADDR it
// also stands for the shop's other systems: it receives the order
// notifications the workflow sends with skein.HTTP (POST /orders on
// ADDR) and prints one line per notification ("notified o-1 placed").
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/skeinrun/skein/activity"
	"github.com/skeinrun/skein/worker"
)

// Order, Reservation and Receipt are the JSON documents of the workflow
// (examples/order/main.go).
type Order struct {
	ID   string `json:"id"`
	Item string `json:"item"`
	Qty  int    `json:"qty"`
	Card string `json:"card"`
}

// Reservation is a hold on stock.
type Reservation struct {
	ID   string `json:"id"`
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

// Receipt is a charge made.
type Receipt struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// shop is the world the activities change: stock by item.
type shop struct {
	mu    sync.Mutex
	stock map[string]int
	out   *os.File
	delay time.Duration
}

func (s *shop) log(ctx context.Context, what, order string) {
	i, _ := activity.InfoFrom(ctx)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(s.out, "%s %s attempt %d\n", what, order, i.Attempt)
}

func (s *shop) reserve(ctx context.Context, o Order) (Reservation, error) {
	s.log(ctx, "reserve-stock", o.ID)
	if err := s.wait(ctx); err != nil {
		return Reservation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stock[o.Item] < o.Qty {
		return Reservation{}, activity.NonRetryable(fmt.Errorf("only %d of %q in stock", s.stock[o.Item], o.Item))
	}
	s.stock[o.Item] -= o.Qty
	i, _ := activity.InfoFrom(ctx)
	return Reservation{ID: "res-" + i.IdempotencyKey, Item: o.Item, Qty: o.Qty}, nil
}

func (s *shop) release(ctx context.Context, r Reservation) (Reservation, error) {
	s.log(ctx, "release-stock", r.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stock[r.Item] += r.Qty
	return r, nil
}

func (s *shop) charge(ctx context.Context, o Order) (Receipt, error) {
	s.log(ctx, "charge", o.ID)
	if err := s.wait(ctx); err != nil {
		return Receipt{}, err
	}
	i, _ := activity.InfoFrom(ctx)
	switch {
	case o.Card == "declined":
		return Receipt{}, errors.New("card declined")
	case o.Card == "flaky" && i.Attempt == 1:
		return Receipt{}, errors.New("payment gateway unavailable")
	}
	return Receipt{ID: "rcpt-" + i.IdempotencyKey, Amount: 10 * o.Qty}, nil
}

// wait stands for the time a real call takes (--delay).
func (s *shop) wait(ctx context.Context) error {
	if s.delay <= 0 {
		return nil
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func main() {
	server := flag.String("server", "http://127.0.0.1:7070", "the skein server's URL")
	token := flag.String("token", os.Getenv("SKEIN_TOKEN"), "the server's API token (default $SKEIN_TOKEN)")
	id := flag.String("id", "", "this worker's identity (default {hostname}-{pid}-{random})")
	concurrency := flag.Int("concurrency", 16, "tasks run at once")
	delay := flag.Duration("delay", 0, "how long each reserve and charge takes")
	webhook := flag.String("webhook", "", "also receive order notifications: POST /orders on this address (host:port)")
	flag.Parse()
	if *webhook != "" {
		if err := serveWebhook(*webhook); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	s := &shop{stock: map[string]int{"book": 100, "lamp": 5}, out: os.Stdout, delay: *delay}
	w, err := worker.New(worker.Options{Server: *server, Token: *token, Identity: *id, Concurrency: *concurrency,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w.Register("reserve-stock", activity.Typed(s.reserve))
	w.Register("release-stock", activity.Typed(s.release))
	w.Register("charge", activity.Typed(s.charge))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// notification is what the workflow posts to the webhook.
type notification struct {
	Order  string `json:"order"`
	Status string `json:"status"`
}

var outMu sync.Mutex

// serveWebhook answers POST /orders on addr, printing each notification.
func serveWebhook(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var n notification
		if err == nil {
			err = json.Unmarshal(body, &n)
		}
		if err != nil {
			http.Error(w, "bad notification: "+err.Error(), http.StatusBadRequest)
			return
		}
		outMu.Lock()
		fmt.Printf("notified %s %s\n", n.Order, n.Status)
		outMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"received":%q}`+"\n", n.Order)
	})
	go func() {
		if err := http.Serve(ln, mux); err != nil {
			slog.Error("webhook: the server stopped", "err", err)
		}
	}()
	return nil
}
