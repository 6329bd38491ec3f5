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
