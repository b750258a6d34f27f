package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// EventByIDPrefix returns the event whose id starts with prefix — an
// annotation found by the number its POST answered, which is a prefix of
// its id's hash — or ErrNotFound. The ids starting with prefix are, in
// byte order, those in [prefix, prefix with its last byte one higher),
// which the byte-order index on id serves (migration 000022).
func (s *Store) EventByIDPrefix(ctx context.Context, prefix string) (correlate.Event, error) {
	if prefix == "" || prefix[len(prefix)-1] >= 0x7f {
		return correlate.Event{}, ErrNotFound // AnnotationIDPrefix makes neither
	}
	upper := prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
	rows, err := s.db.Query(ctx, `SELECT id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs
		FROM events WHERE id COLLATE "C" >= $1 AND id COLLATE "C" < $2 ORDER BY id COLLATE "C" LIMIT 1`, prefix, upper)
	if err != nil {
		return correlate.Event{}, wrap("event", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEvent)
	return e, wrap("event", err)
}

// UpdateEvent writes every field of the event with e's id, or returns
// ErrNotFound.
func (s *Store) UpdateEvent(ctx context.Context, e correlate.Event) error {
	args, err := eventArgs(e)
	if err != nil {
		return wrap("update event", err)
	}
	tag, err := s.db.Exec(ctx, `UPDATE events SET kind = $2, time = $3, end_time = $4, model = $5, version = $6,
		tenant = $7, replica = $8, node = $9, source = $10, summary = $11, attrs = $12 WHERE id = $1`, args...)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("update event", err)
}

// DeleteEvent removes the event with id, or returns ErrNotFound.
func (s *Store) DeleteEvent(ctx context.Context, id string) error {
	tag, err := s.db.Exec(ctx, `DELETE FROM events WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("delete event", err)
}
