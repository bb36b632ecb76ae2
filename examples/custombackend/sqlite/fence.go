package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/pipestate/pipestate/fence"
)

// record names one record for the record_fences table: its kind and up to three key
// parts (see schema.sql).
type record struct{ kind, a, b, c string }

func (r record) String() string {
	return strings.TrimRight(r.kind+" "+r.a+"/"+r.b+"/"+r.c, "/")
}

// execFenced runs one write statement. When ctx carries a fence (package fence),
// it runs in one transaction with the fencing rule of r: what r remembers is read
// first (a stale fence is refused, nothing written), and the fence is remembered
// when the statement changed a row. It returns the rows changed.
func (p *Provider) execFenced(ctx context.Context, op string, r record, query string, args ...any) (int64, error) {
	if _, ok := fence.FromContext(ctx); !ok {
		return p.exec(ctx, p.db, op, query, args...)
	}
	var n int64
	err := p.inTx(ctx, op, func(tx *sql.Tx) error {
		remember, err := p.admit(ctx, tx, op, r)
		if err != nil {
			return err
		}
		if n, err = p.exec(ctx, tx, op, query, args...); err != nil || n == 0 {
			return err
		}
		return remember()
	})
	return n, err
}

// admit applies the fencing rule to ctx's write of r in tx: an error wrapping
// fence.ErrFenced when a newer fence of the write's lease key wrote r, otherwise
// the function the write calls, in tx, once it wrote (nothing to do unfenced).
func (p *Provider) admit(ctx context.Context, tx *sql.Tx, op string, r record) (remember func() error, err error) {
	t, ok := fence.FromContext(ctx)
	if !ok {
		return func() error { return nil }, nil
	}
	var newest int64
	err = tx.QueryRowContext(ctx, `SELECT fence FROM record_fences WHERE kind = ? AND a = ? AND b = ? AND c = ? AND lease_key = ?`,
		r.kind, r.a, r.b, r.c, t.Key).Scan(&newest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, p.fail(ctx, op, err)
	default:
		if err := (fence.Set{t.Key: newest}).Check(t, r.String()); err != nil {
			return nil, err
		}
	}
	return func() error {
		_, err := p.exec(ctx, tx, op, `INSERT INTO record_fences (kind, a, b, c, lease_key, fence) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (kind, a, b, c, lease_key) DO UPDATE SET fence = MAX(fence, excluded.fence)`,
			r.kind, r.a, r.b, r.c, t.Key, t.Fence)
		return err
	}, nil
}
