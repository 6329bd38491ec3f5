package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
)

// The writer runs its statements on the driver's connection directly
// (database/sql's Conn.Raw), not through database/sql: that package
// converts every argument (a third of a commit's own cost, with the
// driver's binding) and looks its statement up on the connection at each
// transaction. Every statement, including the writes that are not
// hot, is prepared once per connection and kept: wconn.

// driverConn is what the writer needs of the driver's connection
// (modernc.org/sqlite's implements it).
type driverConn interface {
	driver.Conn
	driver.ConnPrepareContext
}

// driverStmt is what the writer needs of a prepared statement.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// maxAdHoc bounds the statements wconn keeps beyond namedSQL: a write
// built with a variable number of parameters makes a text per count.
const maxAdHoc = 256

// wconn is the writer's connection with its prepared statements. It is
// used by the writer goroutine only, inside a Raw call (withConn), and
// at Open and Close.
type wconn struct {
	dc     driverConn
	named  [nNamedSQL]driverStmt
	upsert [outcomeChunk + 1]driverStmt // upsert[n] writes n outcome rows
	plain  driverStmt                   // upsertPlainSQL(outcomeChunk)
	adHoc  map[string]driverStmt        // other texts, prepared on first use
	nv     []driver.NamedValue          // reused argument buffer
}

// withConn runs f on the writer's connection, its statements prepared.
// The connection stays the same for the store's life (one, never
// expired); should database/sql ever hand over another, the statements
// are prepared again on it.
func (d *DB) withConn(ctx context.Context, f func(c *wconn) error) error {
	conn, err := d.wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("writer connection: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, err := d.wconn(dc)
		if err != nil {
			return err
		}
		return f(c)
	})
}

// wconn returns the prepared connection of dc, preparing it if dc is new.
func (d *DB) wconn(dc any) (*wconn, error) {
	if d.wc != nil && d.wc.dc == dc {
		return d.wc, nil
	}
	dconn, ok := dc.(driverConn)
	if !ok {
		return nil, fmt.Errorf("writer connection: driver connection %T cannot prepare with a context", dc)
	}
	c := &wconn{dc: dconn, adHoc: make(map[string]driverStmt)}
	if err := c.prepareAll(); err != nil {
		_ = c.close() // the prepare's error is the one to return
		return nil, err
	}
	d.wc = c // one on a connection database/sql dropped is not closed: its statements went with it
	return c, nil
}

// prepare prepares q on the connection.
func (c *wconn) prepare(q string) (driverStmt, error) {
	st, err := c.dc.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	ds, ok := st.(driverStmt)
	if !ok {
		_ = st.Close() // unusable; the type is the error
		return nil, fmt.Errorf("driver statement %T cannot run with a context", st)
	}
	return ds, nil
}

// prepareAll prepares the statements of every commit: the outcome
// upserts and namedSQL.
func (c *wconn) prepareAll() error {
	var err error
	for n := 1; n <= outcomeChunk; n++ {
		if c.upsert[n], err = c.prepare(upsertOutcomesSQL(n)); err != nil {
			return fmt.Errorf("prepare %d-row outcome upsert: %w", n, err)
		}
	}
	if c.plain, err = c.prepare(upsertPlainSQL(outcomeChunk)); err != nil {
		return fmt.Errorf("prepare the plain outcome upsert: %w", err)
	}
	for i, q := range namedSQL {
		if c.named[i], err = c.prepare(q); err != nil {
			return fmt.Errorf("prepare %.40q: %w", q, err)
		}
	}
	return nil
}

// close closes every statement of c.
func (c *wconn) close() error {
	var errs []error
	for _, st := range append(append(c.upsert[1:], c.plain), c.named[:]...) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range c.adHoc {
		errs = append(errs, st.Close())
	}
	clear(c.adHoc)
	return errors.Join(errs...)
}

// stmtFor returns q prepared, and whether the caller must close it (past
// maxAdHoc texts).
func (c *wconn) stmtFor(q string) (st driverStmt, temp bool, err error) {
	if st, ok := c.adHoc[q]; ok {
		return st, false, nil
	}
	if st, err = c.prepare(q); err != nil {
		return nil, false, err
	}
	if len(c.adHoc) >= maxAdHoc {
		return st, true, nil
	}
	c.adHoc[q] = st
	return st, false, nil
}

// args converts args into c.nv as database/sql would, without its
// checks of a driver.NamedValueChecker (the driver has none).
func (c *wconn) args(args []any) ([]driver.NamedValue, error) {
	nv := c.nv[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	c.nv = nv
	return nv, nil
}

// driverValue is a as a driver.Value: the common types as they are,
// anything else through driver.DefaultParameterConverter.
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case nil, string, []byte, int64, float64, bool:
		return a, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// exec runs st with the arguments nv (of args, or none).
func (c *wconn) exec(st driverStmt, nv []driver.NamedValue) (driver.Result, error) {
	res, err := st.ExecContext(context.Background(), nv)
	clear(nv) // drop references to the callers' values
	return res, err
}

// rawTx runs texts on the writer's connection inside its open
// transaction, as *sql.Tx would.
type rawTx struct{ c *wconn }

// ExecContext runs q with args.
func (t rawTx) ExecContext(_ context.Context, q string, args ...any) (driver.Result, error) {
	st, temp, err := t.c.stmtFor(q)
	if err != nil {
		return nil, err
	}
	if temp {
		defer st.Close()
	}
	return rawStmt{t.c, st}.ExecContext(context.Background(), args...)
}

// QueryContext runs q with args and returns its rows.
func (t rawTx) QueryContext(_ context.Context, q string, args ...any) (*rawRows, error) {
	st, temp, err := t.c.stmtFor(q)
	if err != nil {
		return nil, err
	}
	rows, err := rawStmt{t.c, st}.query(args)
	if temp && rows != nil {
		rows.temp = st
	} else if temp {
		_ = st.Close() // the query's error is the one to return
	}
	return rows, err
}

// QueryRowContext runs q with args and returns its first row.
func (t rawTx) QueryRowContext(ctx context.Context, q string, args ...any) *rawRow {
	rows, err := t.QueryContext(ctx, q, args...)
	return &rawRow{rows: rows, err: err}
}

// rawStmt is a statement prepared on the writer's connection, used as
// *sql.Stmt would be.
type rawStmt struct {
	c  *wconn
	st driverStmt
}

// ExecContext runs the statement with args.
func (s rawStmt) ExecContext(_ context.Context, args ...any) (driver.Result, error) {
	nv, err := s.c.args(args)
	if err != nil {
		return nil, err
	}
	return s.c.exec(s.st, nv)
}

// QueryContext runs the statement with args and returns its rows.
func (s rawStmt) QueryContext(_ context.Context, args ...any) (*rawRows, error) {
	return s.query(args)
}

func (s rawStmt) query(args []any) (*rawRows, error) {
	nv, err := s.c.args(args)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.QueryContext(context.Background(), nv)
	clear(nv)
	if err != nil {
		return nil, err
	}
	return &rawRows{c: s.c, rows: rows}, nil
}

// QueryRowContext runs the statement with args and returns its first row.
func (s rawStmt) QueryRowContext(_ context.Context, args ...any) *rawRow {
	rows, err := s.query(args)
	return &rawRow{rows: rows, err: err}
}

// rawRows are a query's rows, used as *sql.Rows would be.
type rawRows struct {
	c      *wconn
	rows   driver.Rows
	temp   driver.Stmt // closed with the rows (past maxAdHoc)
	vals   []driver.Value
	err    error
	closed bool
}

// Next reads the next row; false at the end or on an error (Err).
func (r *rawRows) Next() bool {
	if r.closed {
		return false
	}
	if r.vals == nil {
		r.vals = make([]driver.Value, len(r.rows.Columns()))
	}
	if err := r.rows.Next(r.vals); err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		_ = r.Close() // ended; an error of the read is the one to report
		return false
	}
	return true
}

// Scan copies the current row into dest.
func (r *rawRows) Scan(dest ...any) error {
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sql: expected %d destination arguments in Scan, not %d", len(r.vals), len(dest))
	}
	for i, v := range r.vals {
		if err := assign(dest[i], v); err != nil {
			return fmt.Errorf("sql: Scan error on column index %d: %w", i, err)
		}
	}
	return nil
}

// Err is the error that ended Next, if any.
func (r *rawRows) Err() error { return r.err }

// Close closes the rows; again is a no-op.
func (r *rawRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.rows.Close()
	if r.temp != nil {
		err = errors.Join(err, r.temp.Close())
	}
	return err
}

// rawRow is a query's first row, used as *sql.Row would be: Scan fails
// with sql.ErrNoRows if there is none.
type rawRow struct {
	rows *rawRows
	err  error
}

// Scan copies the first row into dest and closes the rows.
func (r *rawRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}
