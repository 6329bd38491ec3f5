// Command digest is a workflow a schedule runs once a day
// (docs/schedules.md): it gathers the day's entries of a feed in a step,
// ranks them in another, and renders the digest. Each step's result is
// recorded, so a digest that crashes half way resumes without gathering
// again, and its run id (sched:{schedule}@{slot}) makes each day's
// digest start exactly once. A webhook may start it too, with the input
// as the request's JSON body.
//
//	skein schedule create daily-digest --cron '0 7 * * *' --timezone Europe/Paris \
//	    --module digest --workflow digest --input '{"feed":"releases","top":3}'
package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skeinrun/skein/guest-sdk/skein"
)

type input struct {
	Feed string `json:"feed"`
	Top  int    `json:"top"` // entries in the digest; default 3
	// JSON is set when a webhook started the run: the request's body
	// (docs/schedules.md), which holds the feed and top instead.
	JSON *input `json:"json"`
}

type entry struct {
	Title string `json:"title"`
	Score int    `json:"score"`
}

type digest struct {
	Day     string  `json:"day"`     // the day the digest covers (UTC)
	Feed    string  `json:"feed"`    // the feed it reads
	Entries []entry `json:"entries"` // the top entries, best first
	Text    string  `json:"text"`    // the digest as it would be mailed
}

// gather stands in for reading a feed: the day's entries, the same for
// the same feed and day.
func gather(feed string, day time.Time) []entry {
	var out []entry
	for i := range 6 {
		out = append(out, entry{
			Title: fmt.Sprintf("%s #%d of %s", feed, i+1, day.Format("2006-01-02")),
			Score: (day.YearDay()*7 + i*13) % 50,
		})
	}
	return out
}

func run(ctx *skein.Context, in input) (digest, error) {
	if in.JSON != nil { // started by a webhook: the body is the input
		in = *in.JSON
	}
	if in.Top <= 0 {
		in.Top = 3
	}
	if in.Feed == "" {
		return digest{}, fmt.Errorf(`input: "feed" is empty`)
	}
	day := skein.Now(ctx).UTC().Truncate(24 * time.Hour)
	entries, err := skein.Step(ctx, "gather", func(*skein.StepContext) ([]entry, error) {
		return gather(in.Feed, day), nil
	})
	if err != nil {
		return digest{}, err
	}
	top, err := skein.Step(ctx, "rank", func(*skein.StepContext) ([]entry, error) {
		ranked := slices.Clone(entries)
		slices.SortStableFunc(ranked, func(a, b entry) int { return b.Score - a.Score })
		return ranked[:min(in.Top, len(ranked))], nil
	})
	if err != nil {
		return digest{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s digest for %s\n", in.Feed, day.Format("2006-01-02"))
	for i, e := range top {
		fmt.Fprintf(&b, "%d. %s (%d)\n", i+1, e.Title, e.Score)
	}
	return digest{Day: day.Format("2006-01-02"), Feed: in.Feed, Entries: top, Text: b.String()}, nil
}

func main() {
	skein.Register("digest", run)
	skein.Main()
}
