package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// InsertEvents stores events all-or-nothing and returns how many were new
// and how many were already there (same id). Retrying a batch is therefore
// harmless: the second time every event is a duplicate.
func (s *Store) InsertEvents(ctx context.Context, events []correlate.Event) (accepted, duplicates int, err error) {
	if len(events) == 0 {
		return 0, 0, nil
	}
	// In id order: two batches of the same new events in different orders
	// would take their rows' locks in opposite orders and deadlock.
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b correlate.Event) int { return strings.Compare(a.ID, b.ID) })
	err = s.InTx(ctx, func(tx *Store) error {
		b := &pgx.Batch{}
		for _, e := range events {
			args, err := eventArgs(e)
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO events (id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`, args...)
		}
		br := tx.db.SendBatch(ctx, b)
		defer br.Close()
		for range events {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			accepted += int(tag.RowsAffected())
		}
		return br.Close()
	})
	if err != nil {
		return 0, 0, wrap("insert events", err)
	}
	return accepted, len(events) - accepted, nil
}

// EventConflict is an event id already stored for another change: its
// Field says what differs. Nothing of the batch was stored.
type EventConflict struct {
	Index int    // the event's position in the batch given
	ID    string // its id
	Field string // the first field that differs: kind, time, model, …
}

func (e *EventConflict) Error() string {
	return fmt.Sprintf("event %q is already stored with another %s", e.ID, e.Field)
}

// ReportEvents stores pushed change events all-or-nothing, as
// InsertEvents does, but an id is one change: an event whose id is stored
// with another kind, time, scope, summary, source or attributes is an
// *EventConflict, not a duplicate (a pipeline naming its events
// "deploy-<model>" would have had every later deploy dropped). The same
// event sent again with the end time the stored one lacks (the rollout's
// end, reported once it is over) completes it, and counts as accepted; a
// retry that leaves out a stored end time is a duplicate.
func (s *Store) ReportEvents(ctx context.Context, events []correlate.Event) (accepted, duplicates int, err error) {
	if len(events) == 0 {
		return 0, 0, nil
	}
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	// In id order, as InsertEvents (lock order).
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(events[a].ID, events[b].ID) })
	err = s.InTx(ctx, func(tx *Store) error {
		b := &pgx.Batch{}
		for _, i := range order {
			args, err := eventArgs(events[i])
			if err != nil {
				return err
			}
			// The outer SELECT reads the row as it was before this
			// statement: the stored event, if any, and how it compares.
			b.Queue(`WITH ins AS (
				INSERT INTO events (id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
				ON CONFLICT (id) DO UPDATE SET end_time = EXCLUDED.end_time
				WHERE events.end_time IS NULL AND EXCLUDED.end_time IS NOT NULL AND events.kind = EXCLUDED.kind
				  AND events.time = EXCLUDED.time AND events.model = EXCLUDED.model AND events.version = EXCLUDED.version
				  AND events.tenant = EXCLUDED.tenant AND events.replica = EXCLUDED.replica AND events.node = EXCLUDED.node
				  AND events.source = EXCLUDED.source AND events.summary = EXCLUDED.summary
				  AND events.attrs IS NOT DISTINCT FROM EXCLUDED.attrs
				RETURNING 1)
			SELECT (SELECT count(*) FROM ins), e.id IS NOT NULL,
				coalesce(e.kind = $2, true), coalesce(e.time = $3, true),
				coalesce($4::timestamptz IS NULL OR e.end_time IS NULL OR e.end_time = $4, true),
				coalesce(e.model = $5, true), coalesce(e.version = $6, true), coalesce(e.tenant = $7, true),
				coalesce(e.replica = $8, true), coalesce(e.node = $9, true), coalesce(e.source = $10, true),
				coalesce(e.summary = $11, true), coalesce(e.attrs IS NOT DISTINCT FROM $12::jsonb, true)
			FROM (SELECT 1) one LEFT JOIN events e ON e.id = $1`, args...)
		}
		br := tx.db.SendBatch(ctx, b)
		defer br.Close()
		fields := []string{"kind", "time", "end_time", "model", "version", "tenant", "replica", "node", "source", "summary", "attrs"}
		// late are the events whose id another transaction stored while
		// this one waited for it: the statement's snapshot, taken before
		// that commit, does not show the row it conflicted with.
		var late []int
		for _, i := range order {
			var (
				written int
				stored  bool
				same    = make([]bool, len(fields))
				dest    = []any{&written, &stored}
			)
			for j := range same {
				dest = append(dest, &same[j])
			}
			if err := br.QueryRow().Scan(dest...); err != nil {
				return err
			}
			if written > 0 {
				accepted++
				continue
			}
			if !stored {
				late = append(late, i)
				continue
			}
			for j, ok := range same {
				if !ok {
					return &EventConflict{Index: i, ID: events[i].ID, Field: fields[j]}
				}
			}
			duplicates++
		}
		if err := br.Close(); err != nil {
			return err
		}
		// Compared again, each statement with a new snapshot (read
		// committed), which holds the row.
		for _, i := range late {
			args, err := eventArgs(events[i])
			if err != nil {
				return err
			}
			same := make([]bool, len(fields))
			dest := make([]any, len(fields))
			for j := range same {
				dest[j] = &same[j]
			}
			if err := tx.db.QueryRow(ctx, `SELECT
				coalesce(e.kind = $2, true), coalesce(e.time = $3, true),
				coalesce($4::timestamptz IS NULL OR e.end_time IS NULL OR e.end_time = $4, true),
				coalesce(e.model = $5, true), coalesce(e.version = $6, true), coalesce(e.tenant = $7, true),
				coalesce(e.replica = $8, true), coalesce(e.node = $9, true), coalesce(e.source = $10, true),
				coalesce(e.summary = $11, true), coalesce(e.attrs IS NOT DISTINCT FROM $12::jsonb, true)
			FROM (SELECT 1) one LEFT JOIN events e ON e.id = $1::text`, args...).Scan(dest...); err != nil {
				return err
			}
			for j, ok := range same {
				if !ok {
					return &EventConflict{Index: i, ID: events[i].ID, Field: fields[j]}
				}
			}
			duplicates++
		}
		return nil
	})
	var conflict *EventConflict
	if errors.As(err, &conflict) {
		return 0, 0, conflict
	}
	if err != nil {
		return 0, 0, wrap("report events", err)
	}
	return accepted, duplicates, nil
}

// eventArgs are an event's columns in the order of the events table's
// insert statements ($1 id … $12 attrs).
func eventArgs(e correlate.Event) ([]any, error) {
	var attrs []byte
	if len(e.Attrs) > 0 {
		var err error
		if attrs, err = json.Marshal(e.Attrs); err != nil {
			return nil, err
		}
	}
	return []any{e.ID, string(e.Kind), e.Time, e.EndTime, e.Model, e.Version, e.Tenant, e.Replica, e.Node, e.Source, e.Summary, attrs}, nil
}

// EventFilter selects events by time window and scope. Empty scope fields
// match everything; a set field matches events with that value or with the
// field empty (a fleet-wide config change concerns every model).
type EventFilter struct {
	From, To time.Time // half-open [From, To)
	Scope    correlate.Scope
	Kinds    []correlate.EventKind // empty = all
	Limit    int                   // 0 = no limit; see Events for which are kept
}

// Events returns the events of f ordered by time. Under a limit the
// changes people make (deploys, rollbacks, config and route changes) are
// kept first, then the fleet's reactions and faults (scaling, node faults,
// alerts), then the rest (restarts, annotations), each earliest first: a
// crash loop's thousands of restarts must not push the deploy out.
func (s *Store) Events(ctx context.Context, f EventFilter) ([]correlate.Event, error) {
	kinds := make([]string, len(f.Kinds))
	for i, k := range f.Kinds {
		kinds[i] = string(k)
	}
	limit, order := f.Limit, "time, id"
	if limit <= 0 {
		limit = 1 << 30
	} else {
		order = kindRankSQL + ", time, id"
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs
		FROM events
		WHERE time >= $1 AND time < $2
		  AND ($3 = '' OR model = $3 OR model = '')
		  AND ($4 = '' OR version = $4 OR version = '')
		  AND ($5 = '' OR tenant = $5 OR tenant = '')
		  AND ($6 = '' OR replica = $6 OR replica = '')
		  AND ($7 = '' OR node = $7 OR node = '')
		  AND (cardinality($8::text[]) = 0 OR kind = ANY($8))
		ORDER BY `+order+`
		LIMIT $9`,
		f.From, f.To, f.Scope.Model, f.Scope.Version, f.Scope.Tenant, f.Scope.Replica, f.Scope.Node, kinds, limit)
	if err != nil {
		return nil, wrap("events", err)
	}
	out, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, wrap("events", err)
	}
	if f.Limit <= 0 {
		return out, nil
	}
	slices.SortStableFunc(out, func(a, b correlate.Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// kindRank orders event kinds for a limited read (Events, a snapshot's
// events): the changes people make, then the fleet's reactions, faults
// and alerts, then the rest. kindRankSQL is the same in SQL.
func kindRank(k correlate.EventKind) int {
	switch k {
	case correlate.KindDeploy, correlate.KindRollback, correlate.KindConfigChange, correlate.KindRouteChange:
		return 0
	case correlate.KindScaleUp, correlate.KindScaleDown, correlate.KindNodeFault, correlate.KindNodeRecovered, correlate.KindAlert:
		return 1
	}
	return 2
}

const kindRankSQL = `CASE WHEN kind IN ('deploy', 'rollback', 'config_change', 'route_change') THEN 0
	WHEN kind IN ('scale_up', 'scale_down', 'node_fault', 'node_recovered', 'alert') THEN 1 ELSE 2 END`

// LimitEvents keeps limit of events (in time order) as Store.Events does
// — the changes first, then scaling, faults and alerts, then the rest,
// earliest first within a kind — and returns them in time order.
func LimitEvents(events []correlate.Event, limit int) []correlate.Event {
	return limitEvents(events, limit)
}

// limitEvents keeps the first limit of events (in time order) by
// kindRank, then time, and returns them in time order.
func limitEvents(events []correlate.Event, limit int) []correlate.Event {
	if limit <= 0 || len(events) <= limit {
		return events
	}
	byTime := func(a, b correlate.Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	ranked := slices.Clone(events)
	slices.SortStableFunc(ranked, func(a, b correlate.Event) int {
		if d := kindRank(a.Kind) - kindRank(b.Kind); d != 0 {
			return d
		}
		return byTime(a, b)
	})
	ranked = ranked[:limit]
	slices.SortStableFunc(ranked, byTime)
	return ranked
}

// EventByID returns one event, or ErrNotFound.
func (s *Store) EventByID(ctx context.Context, id string) (correlate.Event, error) {
	rows, err := s.db.Query(ctx, `SELECT id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs
		FROM events WHERE id = $1`, id)
	if err != nil {
		return correlate.Event{}, wrap("event", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEvent)
	return e, wrap("event", err)
}

// scanEvent reads one events row (id, kind, time, end_time, model,
// version, tenant, replica, node, source, summary, attrs).
func scanEvent(row pgx.CollectableRow) (correlate.Event, error) {
	var (
		e     correlate.Event
		kind  string
		attrs []byte
	)
	if err := row.Scan(&e.ID, &kind, &e.Time, &e.EndTime, &e.Model, &e.Version, &e.Tenant, &e.Replica, &e.Node,
		&e.Source, &e.Summary, &attrs); err != nil {
		return e, err
	}
	e.Kind = correlate.EventKind(kind)
	e.Time = e.Time.UTC()
	if e.EndTime != nil {
		t := e.EndTime.UTC()
		e.EndTime = &t
	}
	if len(attrs) > 0 {
		dec := json.NewDecoder(bytes.NewReader(attrs))
		dec.UseNumber() // exact, as stored
		if err := dec.Decode(&e.Attrs); err != nil {
			return e, fmt.Errorf("attrs: %w", err)
		}
	}
	return e, nil
}
