package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// Alert statuses as Alertmanager sends them.
const (
	AlertFiring   = "firing"
	AlertResolved = "resolved"
)

// AlertGroup is one Alertmanager notification: a group of alerts with the
// group's status ("resolved" only when every alert is resolved).
type AlertGroup struct {
	GroupKey string
	Status   string          // AlertFiring or AlertResolved
	Title    string          // title of an incident this group opens
	Scope    correlate.Scope // labels common to the group's alerts
	Alerts   []Alert
	// Truncated: Alertmanager left alerts of the group out
	// (truncatedAlerts > 0, max_alerts), so Alerts need not hold every
	// active one.
	Truncated bool
}

// Alert is one alert of a group. (GroupKey, Fingerprint, StartsAt) is its
// identity: Alertmanager re-sends the same alert on every group update and
// retries on failure.
type Alert struct {
	Fingerprint string
	Status      string
	StartsAt    time.Time
	EndsAt      *time.Time      // only for resolved alerts
	Event       correlate.Event // the alert on the timeline (kind alert)
	// Meta: one of Alertmanager's own alerts about its pipeline
	// (Watchdog, InfoInhibitor: severity "none"), never an incident.
	Meta bool
}

// AlertOutcome says what a notification did.
type AlertOutcome struct {
	IncidentID int64 // 0: no alert makes an incident (makesIncident); stored as events only
	Opened     bool  // a new incident was created
	Extended   bool  // an open incident's window or scope grew
	Resolved   bool  // the incident was resolved by this notification
	NewAlerts  int   // alerts not seen before
	Adopted    bool  // the group took over an open detector incident of its model
	// Superseded is the group's open incident that this firing
	// notification showed to be over (see ApplyAlertGroup), resolved as a
	// resolved notification resolves one; 0: none.
	Superseded int64
}

// Changed reports whether the incident changed in a way worth re-analysing.
func (o AlertOutcome) Changed() bool { return o.Opened || o.Extended || o.Resolved || o.Adopted }

// ApplyAlertGroup records a notification: a firing group opens an incident
// over [earliest startsAt − lookback, open) or extends the group's open
// one; a resolved group resolves it, ending its window at the latest
// endsAt. Only alerts new or filed under the incident count there: the
// notification re-sends alerts an older incident holds. It is idempotent on (groupKey, fingerprint, startsAt): the same
// notification again, or a stale firing one after the resolution, changes
// nothing, and a late copy of an older incident's notification goes to that
// incident, not the group's open one. A group with no open incident
// adopts the detector's open incident of its model (common to its
// alerts) whose window reaches into the lookback before its first
// startsAt, rather than open a second one for the same spike: it then
// owns that incident's resolution, as it owns its own (the detector only
// attaches spikes to either). Concurrent deliveries of one group
// (an Alertmanager HA pair) are serialised by an advisory lock. Each alert
// is also upserted as an event.
//
// A group none of whose alerts names a model (Watchdog, a node's disk:
// see makesIncident) is stored as alert events only, context on the
// timeline: it opens, extends and resolves nothing, and its outcome has no
// incident. A resolution of alerts filed under an incident before still
// reaches it.
//
// A group's key changes when its route or group_by is edited while its
// alerts fire: a key with no open incident and no receipts whose alerts
// are filed under another key's open incident takes that incident over
// (see rekeyOpenIncident) and applies the notification to it, so its
// resolution still reaches it.
//
// A firing notification carries every active alert of its group. So one
// that is not truncated, holds none of the alerts filed under the
// group's open incident and has new alerts that all started after that
// incident's last alert shows its alerts over, their resolution never
// received (send_resolved: false, or lost): that incident is resolved
// (outcome Superseded), ending when its alerts were last heard firing,
// and the new alerts open an incident of their own, as after a
// resolution. (A new alert that started before the open incident's
// last one fired alongside it: it joins.)
func (s *Store) ApplyAlertGroup(ctx context.Context, g AlertGroup, lookback time.Duration, now time.Time) (AlertOutcome, error) {
	var out AlertOutcome
	if len(g.Alerts) == 0 {
		return out, nil
	}
	// Postgres keeps microseconds; identities must compare equal after a
	// round trip.
	g.Alerts = append([]Alert(nil), g.Alerts...)
	for i := range g.Alerts {
		g.Alerts[i].StartsAt = g.Alerts[i].StartsAt.UTC().Truncate(time.Microsecond)
	}
	fps := make([]string, len(g.Alerts))
	starts := make([]time.Time, len(g.Alerts))
	for i, a := range g.Alerts {
		fps[i], starts[i] = a.Fingerprint, a.StartsAt
	}
	err := s.InTx(ctx, func(tx *Store) error {
		out = AlertOutcome{}
		if _, err := tx.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('waterline.alerts.' || $1))`, g.GroupKey); err != nil {
			return err
		}
		known, err := tx.alertReceipts(ctx, g.GroupKey, fps, starts)
		if err != nil {
			return err
		}
		open, err := scanIncident(tx.db.QueryRow(ctx, incidentSelect+` WHERE i.group_key = $1 AND i.status = 'open'`, g.GroupKey))
		hasOpen := err == nil
		if err != nil && translate(err) != ErrNotFound {
			return err
		}
		rekeyed := 0
		if !hasOpen && len(known) == 0 {
			// Maybe the group's key changed (its route or group_by edited)
			// while its alerts fire: they are filed under another key's
			// open incident, which this key takes over.
			var moved map[string]int64
			if open, moved, err = tx.rekeyOpenIncident(ctx, g.GroupKey, fps, starts); err != nil {
				return err
			}
			hasOpen, known, rekeyed = len(moved) > 0, moved, len(moved)
		}
		if hasOpen {
			over, end, err := tx.episodeOver(ctx, g, known, open.ID, now)
			if err != nil {
				return err
			}
			if over {
				if err := tx.resolveAlertIncident(ctx, open.ID, now, end); err != nil {
					return err
				}
				out.Superseded, hasOpen = open.ID, false
			}
		}
		if !makesIncident(g.Alerts) && (g.Status != AlertResolved || len(known) == 0) {
			if out.NewAlerts, err = tx.newAlertEvents(ctx, g.Alerts); err != nil {
				return err
			}
			return tx.upsertAlertEvents(ctx, g.Alerts)
		}
		var target Incident
		allKnown, filedUnderOpen := true, false
		var knownID int64
		for _, a := range g.Alerts {
			id, ok := known[alertKey(a.Fingerprint, a.StartsAt)]
			allKnown = allKnown && ok
			if ok {
				knownID = id
				filedUnderOpen = filedUnderOpen || (hasOpen && id == open.ID)
			}
		}
		switch {
		case hasOpen && (!allKnown || filedUnderOpen):
			// New alerts, or alerts of the open incident: it is theirs. A
			// late copy of an older incident's notification must not
			// resolve or stretch the one open now (next case).
			target = open
		case knownID != 0 && (allKnown || g.Status == AlertResolved):
			// Every alert already belongs to a resolved incident (a late
			// retry must not reopen it), or a resolution for alerts we
			// filed: the incident they were filed under.
			if target, err = scanIncident(tx.db.QueryRow(ctx, incidentSelect+` WHERE i.id = $1`, knownID)); err != nil {
				return err
			}
		default:
			// New alerts and no open incident of the group: the window is
			// theirs, not that of alerts filed under an older incident.
			minStart, _ := alertSpan(g.Alerts, known, 0)
			wantStart := minStart.Add(-lookback)
			// The detector may have seen the spike first: its open
			// incident of the group's model is adopted (the group owns it
			// from now on). Under the detector's lock, lest both open one
			// at once. Its row is locked as it is found: a resolution in
			// flight is waited for and the incident, resolved, skipped —
			// adopted, its window was reopened on a resolved incident and
			// the alert filed under it opened nothing.
			if _, err := tx.db.Exec(ctx, detectorOpenLock); err != nil {
				return err
			}
			if g.Status == AlertFiring && g.Scope.Model != "" {
				adopted, err := scanIncident(tx.db.QueryRow(ctx, incidentSelect+`
					WHERE i.source = 'detector' AND i.status = 'open' AND i.group_key IS NULL
					  AND (i.model = $1 OR (i.model = '' AND EXISTS (SELECT 1 FROM spikes s WHERE s.incident_id = i.id AND s.model = $1)))
					  AND i.start_at <= $2 AND (i.end_at IS NULL OR i.end_at >= $3)
					ORDER BY i.start_at DESC LIMIT 1 FOR UPDATE OF i`, g.Scope.Model, minStart, wantStart))
				switch {
				case err == nil:
					if _, err := tx.db.Exec(ctx, `UPDATE incidents SET group_key = $2, end_at = NULL, updated_at = now() WHERE id = $1`,
						adopted.ID, g.GroupKey); err != nil {
						return err
					}
					target, out.Adopted = adopted, true
					target.End = nil
				case translate(err) != ErrNotFound:
					return err
				}
			}
			if out.Adopted {
				break
			}
			// Open one (already resolved when the firing notification
			// never reached us).
			err := tx.db.QueryRow(ctx, `
				INSERT INTO incidents (title, source, start_at, model, version, tenant, replica, node, group_key)
				VALUES ($1, 'alertmanager', $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
				g.Title, wantStart, g.Scope.Model, g.Scope.Version, g.Scope.Tenant, g.Scope.Replica, g.Scope.Node,
				g.GroupKey).Scan(&target.ID)
			if err != nil {
				return err
			}
			target.Status, target.Start, target.Scope = IncidentOpen, wantStart, g.Scope
			out.Opened = true
		}
		out.IncidentID = target.ID
		if target.Status == IncidentOpen {
			// Only the alerts that are new or filed under it move its
			// window: a notification re-sends the group's every alert.
			minStart, maxEnd := alertSpan(g.Alerts, known, target.ID)
			wantStart := target.Start
			if !minStart.IsZero() {
				wantStart = minStart.Add(-lookback)
			}
			scope := commonScope(target.Scope, g.Scope)
			if wantStart.Before(target.Start) || scope != target.Scope {
				if _, err := tx.db.Exec(ctx, `
					UPDATE incidents SET start_at = LEAST(start_at, $2), model = $3, version = $4, tenant = $5,
					       replica = $6, node = $7, title = $8, updated_at = now()
					WHERE id = $1`, target.ID, wantStart, scope.Model, scope.Version, scope.Tenant, scope.Replica, scope.Node,
					retitle(target.Title, target.Scope, scope)); err != nil {
					return err
				}
				out.Extended = !out.Opened
			}
			if g.Status == AlertResolved {
				var end *time.Time
				if !maxEnd.IsZero() {
					end = &maxEnd
				}
				if err := tx.resolveAlertIncident(ctx, target.ID, now, end); err != nil {
					return err
				}
				out.Resolved = true
			}
		}
		if out.NewAlerts, err = tx.upsertAlertReceipts(ctx, g, target.ID); err != nil {
			return err
		}
		// Alerts filed under the old key are not new.
		out.NewAlerts -= rekeyed
		return tx.upsertAlertEvents(ctx, g.Alerts)
	})
	if err != nil {
		return AlertOutcome{}, wrap("apply alert group", err)
	}
	return out, nil
}

// resolveAlertIncident resolves an alert group's incident at now, its
// window ending at end (nil: now), and at least a second after its start.
func (s *Store) resolveAlertIncident(ctx context.Context, id int64, now time.Time, end *time.Time) error {
	_, err := s.db.Exec(ctx, `
		UPDATE incidents SET status = 'resolved', resolved_at = $2,
		       end_at = GREATEST(COALESCE($3::timestamptz, $2::timestamptz), start_at + interval '1 second'), updated_at = now()
		WHERE id = $1`, id, now, end)
	return err
}

// episodeOver reports whether firing notification g shows the alerts of
// the group's open incident (openID) over: g is not truncated (it holds
// every active alert of the group), holds none of the alerts filed under
// openID, and has new alerts (not in known; all known is a late copy of
// an older incident's notification), all of which started after the
// last alert filed under openID started (one that started before fired
// alongside it: the same episode). end is when the incident's alerts
// were last heard firing: the latest received_at of its receipts
// (refreshed on every re-send, so at most repeat_interval before they
// ended), at most now. The receipts keep no better bound: a firing
// alert's endsAt is Alertmanager's guess (resolve_timeout), not kept.
func (s *Store) episodeOver(ctx context.Context, g AlertGroup, known map[string]int64, openID int64, now time.Time) (bool, *time.Time, error) {
	if g.Status != AlertFiring || g.Truncated {
		return false, nil, nil
	}
	var firstNew time.Time
	for _, a := range g.Alerts {
		id, ok := known[alertKey(a.Fingerprint, a.StartsAt)]
		if ok && id == openID {
			return false, nil, nil
		}
		if !ok && (firstNew.IsZero() || a.StartsAt.Before(firstNew)) {
			firstNew = a.StartsAt
		}
	}
	if firstNew.IsZero() {
		return false, nil, nil
	}
	var lastStart, lastHeard *time.Time
	if err := s.db.QueryRow(ctx, `SELECT max(starts_at), max(received_at) FROM alert_receipts WHERE incident_id = $1`,
		openID).Scan(&lastStart, &lastHeard); err != nil {
		return false, nil, err
	}
	if lastStart == nil || !firstNew.After(*lastStart) {
		return false, nil, nil
	}
	end := now
	if lastHeard.Before(now) {
		end = *lastHeard
	}
	return true, &end, nil
}

// retitle rebuilds the scope suffix an alert incident's title ends with
// ("InferenceP99High (model=chat replica=chat-1)") for its new scope, as
// the detector's WidenToFleet retitles: "(several models)" once the
// model is dropped. A title without that suffix (a detector incident a
// group adopted) is kept.
func retitle(title string, old, now correlate.Scope) string {
	suffix := ""
	if sc := old.String(); sc != "" {
		suffix = " (" + sc + ")"
	}
	name, ok := strings.CutSuffix(title, suffix)
	if !ok || suffix == "" && old.Model == now.Model {
		return title
	}
	switch {
	case old.Model != "" && now.Model == "":
		name += " (several models)"
	case now.String() != "":
		name += " (" + now.String() + ")"
	}
	if len(name) > 500 { // the incidents API's bound on titles
		return title
	}
	return name
}

// alertSpan returns the earliest startsAt and the latest endsAt (zero:
// none) of the alerts that are new (not in known) or filed under incident
// id; there is at least one when the caller applies them to id.
func alertSpan(alerts []Alert, known map[string]int64, id int64) (minStart, maxEnd time.Time) {
	for _, a := range alerts {
		if k, ok := known[alertKey(a.Fingerprint, a.StartsAt)]; ok && k != id {
			continue
		}
		if minStart.IsZero() || a.StartsAt.Before(minStart) {
			minStart = a.StartsAt
		}
		if a.EndsAt != nil && a.EndsAt.After(maxEnd) {
			maxEnd = *a.EndsAt
		}
	}
	return minStart, maxEnd
}

// makesIncident reports whether a group is an incident of an inference
// fleet: one of its alerts names a model, or one names no part of the
// fleet at all (a fleet-wide latency or SLO alert) and is not one of
// Alertmanager's own meta alerts (Watchdog: always firing, never
// resolved). An alert that names only a node or pod (a disk filling, a
// pod crash-looping) is a cause, context on the timeline, not a symptom
// to page on.
func makesIncident(alerts []Alert) bool {
	for _, a := range alerts {
		sc := a.Event.Scope
		if sc.Model != "" || (!a.Meta && sc.Node == "" && sc.Replica == "") {
			return true
		}
	}
	return false
}

// newAlertEvents counts the alerts whose events are not stored yet (by
// id, or under another group key: see upsertAlertEvents).
func (s *Store) newAlertEvents(ctx context.Context, alerts []Alert) (int, error) {
	ids := make([]string, len(alerts))
	times := make([]time.Time, len(alerts))
	fps := make([]string, len(alerts))
	for i, a := range alerts {
		ids[i], times[i], fps[i] = a.Event.ID, a.Event.Time, a.Fingerprint
	}
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(DISTINCT k.id) FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS k(id, time, fingerprint)
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = k.id)
		  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.kind = 'alert' AND e.source = 'alertmanager' AND e.time = k.time
		                    AND e.attrs->>'fingerprint' = k.fingerprint)`, ids, times, fps).Scan(&n)
	return n, err
}

// commonScope keeps the fields on which a and b agree: an incident whose
// alerts span two models is about both, so it names neither.
func commonScope(a, b correlate.Scope) correlate.Scope {
	keep := func(x, y string) string {
		if x == y {
			return x
		}
		return ""
	}
	return correlate.Scope{Model: keep(a.Model, b.Model), Version: keep(a.Version, b.Version),
		Tenant: keep(a.Tenant, b.Tenant), Replica: keep(a.Replica, b.Replica), Node: keep(a.Node, b.Node)}
}

// alertReceipts maps the already-seen alerts of a group (by fingerprint and
// startsAt) onto the incident they were filed under.
func (s *Store) alertReceipts(ctx context.Context, groupKey string, fps []string, starts []time.Time) (map[string]int64, error) {
	rows, err := s.db.Query(ctx, `
		SELECT r.fingerprint, r.starts_at, r.incident_id FROM alert_receipts r
		JOIN unnest($2::text[], $3::timestamptz[]) AS k(fingerprint, starts_at)
		  ON r.fingerprint = k.fingerprint AND r.starts_at = k.starts_at
		WHERE r.group_key = $1`, groupKey, fps, starts)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	known := map[string]int64{}
	for rows.Next() {
		var (
			fp string
			st time.Time
			id int64
		)
		if err := rows.Scan(&fp, &st, &id); err != nil {
			return nil, err
		}
		known[alertKey(fp, st)] = id
	}
	return known, rows.Err()
}

// rekeyOpenIncident looks for alerts of a group with no receipts under
// groupKey (fingerprints and startsAt fps and starts) among the receipts
// of alert incidents open under another key, and files the group's
// notifications under the one holding most of them (of a tie, the
// oldest): its group_key becomes groupKey, the caller holding groupKey's
// lock and having found no open incident under it (the unique index on
// an open incident's group_key). moved maps the alerts found onto that
// incident; empty: none found, nothing changed. The old key's lock is
// taken, lest a notification under it change the incident meanwhile.
func (s *Store) rekeyOpenIncident(ctx context.Context, groupKey string, fps []string, starts []time.Time) (Incident, map[string]int64, error) {
	// From the open incidents (few) to their receipts under their key,
	// by the receipts' primary key.
	rows, err := s.db.Query(ctx, `
		SELECT r.fingerprint, r.starts_at, i.id, i.group_key FROM incidents i
		JOIN alert_receipts r ON r.group_key = i.group_key AND r.incident_id = i.id
		JOIN unnest($2::text[], $3::timestamptz[]) AS k(fingerprint, starts_at)
		  ON r.fingerprint = k.fingerprint AND r.starts_at = k.starts_at
		WHERE i.status = 'open' AND i.group_key IS NOT NULL AND i.group_key <> $1`, groupKey, fps, starts)
	if err != nil {
		return Incident{}, nil, err
	}
	found := map[int64]map[string]bool{}
	keys := map[int64]string{}
	for rows.Next() {
		var (
			fp, key string
			st      time.Time
			id      int64
		)
		if err := rows.Scan(&fp, &st, &id, &key); err != nil {
			rows.Close()
			return Incident{}, nil, err
		}
		if found[id] == nil {
			found[id] = map[string]bool{}
		}
		found[id][alertKey(fp, st)], keys[id] = true, key
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(found) == 0 {
		return Incident{}, nil, err
	}
	var best int64
	for id, m := range found {
		if best == 0 || len(m) > len(found[best]) || len(m) == len(found[best]) && id < best {
			best = id
		}
	}
	if _, err := s.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('waterline.alerts.' || $1))`, keys[best]); err != nil {
		return Incident{}, nil, err
	}
	tag, err := s.db.Exec(ctx, `UPDATE incidents SET group_key = $3, updated_at = now() WHERE id = $1 AND group_key = $2 AND status = 'open'`,
		best, keys[best], groupKey)
	if err != nil || tag.RowsAffected() == 0 {
		return Incident{}, nil, err // resolved or re-keyed meanwhile
	}
	in, err := scanIncident(s.db.QueryRow(ctx, incidentSelect+` WHERE i.id = $1`, best))
	if err != nil {
		return Incident{}, nil, err
	}
	moved := make(map[string]int64, len(found[best]))
	for k := range found[best] {
		moved[k] = best
	}
	return in, moved, nil
}

func alertKey(fingerprint string, startsAt time.Time) string {
	return fingerprint + "|" + startsAt.UTC().Format(time.RFC3339Nano)
}

// upsertAlertReceipts records every alert of g under incident id (an alert
// seen before keeps its incident) and returns how many were new.
func (s *Store) upsertAlertReceipts(ctx context.Context, g AlertGroup, id int64) (int, error) {
	fps := make([]string, len(g.Alerts))
	starts := make([]time.Time, len(g.Alerts))
	statuses := make([]string, len(g.Alerts))
	ends := make([]*time.Time, len(g.Alerts))
	for i, a := range g.Alerts {
		fps[i], starts[i], statuses[i], ends[i] = a.Fingerprint, a.StartsAt, a.Status, a.EndsAt
	}
	var n int
	err := s.db.QueryRow(ctx, `
		WITH up AS (
			INSERT INTO alert_receipts (group_key, fingerprint, starts_at, status, ends_at, incident_id)
			SELECT DISTINCT ON (fingerprint, starts_at) $1, fingerprint, starts_at, status, ends_at, $6
			FROM unnest($2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[]) AS k(fingerprint, starts_at, status, ends_at)
			ON CONFLICT (group_key, fingerprint, starts_at) DO UPDATE
			   SET status = EXCLUDED.status, ends_at = EXCLUDED.ends_at, received_at = now()
			RETURNING (xmax = 0) AS inserted)
		SELECT count(*) FILTER (WHERE inserted) FROM up`,
		g.GroupKey, fps, starts, statuses, ends, id).Scan(&n)
	return n, err
}

// upsertAlertEvents stores each alert as an event; a resolved alert sets
// the event's end time. An alert is one event whatever group key it came
// under: its event id is derived from the key it was first sent with, so
// the event already stored for the alert (its fingerprint and startsAt)
// under another id is the one updated, lest a group whose key changed
// (its route or group_by edited while it fires) store the alert twice,
// its first event never ended.
func (s *Store) upsertAlertEvents(ctx context.Context, alerts []Alert) error {
	b := &pgx.Batch{}
	for _, a := range alerts {
		e := a.Event
		var attrs []byte
		if len(e.Attrs) > 0 {
			var err error
			if attrs, err = json.Marshal(e.Attrs); err != nil {
				return err
			}
		}
		b.Queue(`INSERT INTO events (id, kind, time, end_time, model, version, tenant, replica, node, source, summary, attrs)
			SELECT COALESCE((SELECT id FROM events WHERE kind = $2 AND source = $10 AND time = $3::timestamptz
			                   AND attrs->>'fingerprint' = $13::text ORDER BY id = $1 DESC, id LIMIT 1), $1),
			       $2, $3::timestamptz, $4::timestamptz, $5, $6, $7, $8, $9, $10, $11, $12::jsonb
			ON CONFLICT (id) DO UPDATE SET end_time = EXCLUDED.end_time
			WHERE EXCLUDED.end_time IS NOT NULL AND events.end_time IS DISTINCT FROM EXCLUDED.end_time`,
			e.ID, string(e.Kind), e.Time, e.EndTime, e.Model, e.Version, e.Tenant, e.Replica, e.Node, e.Source, e.Summary, attrs,
			a.Fingerprint)
	}
	return s.db.SendBatch(ctx, b).Close()
}
