package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// UpsertDerivedEvents stores events that Waterline derived itself (from
// kube-state-metrics) under deterministic ids. A later derivation may know
// more about the same event (the version a rollout brought, once its pods
// appear), so an existing event of the same source is updated rather than
// kept as is; events of another source under the same id are never
// touched. With onlyExisting, nothing new is inserted: the caller saw
// these events only as context before its own window. It returns how many
// events were new.
func (s *Store) UpsertDerivedEvents(ctx context.Context, events []correlate.Event, onlyExisting bool) (inserted int, err error) {
	if len(events) == 0 {
		return 0, nil
	}
	err = s.InTx(ctx, func(tx *Store) error {
		b := &pgx.Batch{}
		for _, e := range events {
			args, err := eventArgs(e)
			if err != nil {
				return err
			}
			if onlyExisting {
				b.Queue(`UPDATE events SET kind = $2, time = $3, end_time = $4, model = $5, version = $6, tenant = $7,
					replica = $8, node = $9, summary = $11, attrs = $12
					WHERE id = $1 AND source = $10`, args...)
				continue
			}
			// xmax = 0 only on a freshly inserted row: it tells inserts from updates.
			b.Queue(`INSERT INTO events AS e (id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
				ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, time = EXCLUDED.time, end_time = EXCLUDED.end_time,
					model = EXCLUDED.model, version = EXCLUDED.version, tenant = EXCLUDED.tenant, replica = EXCLUDED.replica,
					node = EXCLUDED.node, summary = EXCLUDED.summary, attrs = EXCLUDED.attrs
				WHERE e.source = EXCLUDED.source
				RETURNING (xmax = 0)`, args...)
		}
		br := tx.db.SendBatch(ctx, b)
		defer br.Close()
		for range events {
			if onlyExisting {
				if _, err := br.Exec(); err != nil {
					return err
				}
				continue
			}
			var fresh bool
			if err := br.QueryRow().Scan(&fresh); err != nil && err != pgx.ErrNoRows {
				return err
			}
			if fresh {
				inserted++
			}
		}
		return br.Close()
	})
	if err != nil {
		return 0, wrap("upsert derived events", err)
	}
	return inserted, nil
}
