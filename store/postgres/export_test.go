package postgres

import (
	"context"
	"net"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations is migrations, for the tests of package postgres_test.
var Migrations = migrations

// OpenDial is Open with the pool's connections made by dial, for the
// tests of package postgres_test.
func OpenDial(ctx context.Context, dsn string, opts Options, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*DB, error) {
	return open(ctx, dsn, opts, func(c *pgxpool.Config) { c.ConnConfig.DialFunc = dial })
}

// HoldConn acquires one of db's connections (all of them with MaxConns
// 1) until release is called: commits then wait for the writer.
func HoldConn(ctx context.Context, db *DB) (release func(), err error) {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return c.Release, nil
}

// Waiting is the number of batches waiting for db's writer.
func Waiting(db *DB) int {
	db.w.mu.Lock()
	defer db.w.mu.Unlock()
	return len(db.w.queue)
}

// Taken is the number of batches db's writer has taken up.
func Taken(db *DB) int {
	db.w.mu.Lock()
	defer db.w.mu.Unlock()
	return db.w.taken
}
