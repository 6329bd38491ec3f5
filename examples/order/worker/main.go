// Command worker serves the activities of examples/order to a skein
// server: reserve-stock, release-stock and charge. It keeps its stock in
// memory and prints one line per attempt it runs ("charge o-1 attempt 1"),
// so that a test, or a reader, can count them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

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
	i, _ := worker.InfoFrom(ctx)
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
		return Reservation{}, worker.NonRetryable(fmt.Errorf("only %d of %q in stock", s.stock[o.Item], o.Item))
	}
	s.stock[o.Item] -= o.Qty
	i, _ := worker.InfoFrom(ctx)
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
	i, _ := worker.InfoFrom(ctx)
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
	flag.Parse()
	s := &shop{stock: map[string]int{"book": 100, "lamp": 5}, out: os.Stdout, delay: *delay}
	w, err := worker.New(worker.Options{Server: *server, Token: *token, Identity: *id, Concurrency: *concurrency,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w.Register("reserve-stock", worker.Typed(s.reserve))
	w.Register("release-stock", worker.Typed(s.release))
	w.Register("charge", worker.Typed(s.charge))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
