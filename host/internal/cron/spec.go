// Package cron is a schedule's cron expression and its slots: the rules
// of an expression, the parsed form a host keeps so that each expression
// is parsed once, not at every look of its scheduler (docs/limits.md,
// "Schedules and webhooks"), and the step a schedule takes at a time
// (Step).
package cron

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxLen is the longest cron expression a schedule may have, in bytes.
const MaxLen = 256

// Schedule is a parsed cron expression: the next slot after a time.
type Schedule = cron.Schedule

// cronParser reads 5-field specs (minute first), 6-field ones (seconds
// first) and descriptors such as @daily and @every 1h.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads a schedule's cron expression in its time zone. Its errors
// say which rule the expression or the zone broke.
func Parse(expr, tz string) (Schedule, *time.Location, error) {
	if len(expr) > MaxLen {
		return nil, nil, fmt.Errorf("cron expression of %d bytes: the limit is %d bytes (host.MaxCronLen)", len(expr), MaxLen)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, nil, fmt.Errorf("timezone %q: %v", tz, err)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, nil, fmt.Errorf("cron %q: give the time zone as the timezone, not in the expression", expr)
	}
	spec, err := cronParser.Parse(expr)
	if err != nil {
		return nil, nil, fmt.Errorf("cron %q: %v (want 5 fields: minute hour day-of-month month day-of-week, or 6 with seconds first, or a descriptor such as @daily)", expr, err)
	}
	return spec, loc, nil
}

// Cache holds the parsed expressions of the stored schedules, by
// expression and time zone, failures included. Each look of the scheduler
// prunes the entries no one asked for since the previous look, so it
// holds about one entry per schedule. The zero value is ready.
type Cache struct {
	mu     sync.Mutex
	m      map[specKey]*parsedSpec
	look   uint64 // looks of the scheduler so far (prune)
	parses int64  // expressions parsed (what the cache saves; Parses)
}

type specKey struct{ expr, tz string }

type parsedSpec struct {
	spec     cron.Schedule
	loc      *time.Location
	err      error
	used     uint64 // the look it was last asked for in
	reported bool   // err was logged (reportOnce)
}

// Get returns the parsed form of a schedule's expression in its time
// zone, parsing it the first time.
func (c *Cache) Get(expr, tz string) (Schedule, *time.Location, error) {
	k := specKey{expr, tz}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.m[k]
	if p == nil {
		// Parsed under the lock: an expression is at most MaxLen
		// bytes, and the lock keeps two callers from parsing it twice.
		p = &parsedSpec{}
		p.spec, p.loc, p.err = Parse(expr, tz)
		c.parses++
		if c.m == nil {
			c.m = map[specKey]*parsedSpec{}
		}
		c.m[k] = p
	}
	p.used = c.look
	return p.spec, p.loc, p.err
}

// ReportOnce reports whether the failure of an expression was not yet
// reported, and marks it reported: a schedule the scheduler cannot read
// is logged once, not at every look.
func (c *Cache) ReportOnce(expr, tz string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.m[specKey{expr, tz}]
	if p == nil || p.reported {
		return p == nil
	}
	p.reported = true
	return true
}

// Prune drops the entries not asked for since the previous prune and
// starts the next round; the scheduler calls it after each look.
func (c *Cache) Prune() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.m {
		if p.used < c.look {
			delete(c.m, k)
		}
	}
	c.look++
}

// Parses returns how many expressions the cache parsed so far.
func (c *Cache) Parses() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parses
}

// Len returns how many parsed expressions the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
