package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waterline-dev/waterline/correlate"
)

// RecordedSpike is a spike the background detector stored.
type RecordedSpike struct {
	ID         int64
	SeriesKey  string
	IncidentID *int64
	correlate.Spike
}

// RecordSpike stores a detected spike, or updates it when the same series
// already has a spike with the same start (its onset, end and peak move as
// more data arrives). created is true for a spike not seen before.
//
// The update of a spike an incident holds locks the incident's row FOR
// SHARE first, as AttachSpike does: another replica's close pass
// (ResolveQuietIncident) may be resolving it, having read this spike as
// over, and a re-record making it ongoing again landed just after that
// read — a resolved incident held an ongoing spike, and nobody was paged
// until the detector paged again ten minutes later. A resolution in
// flight is now waited for (or waits for this). A spike that comes back up
// after its detector incident was resolved, having ended by then (the
// close pass found it quiet), is news again: it is detached and handed
// back without incident, and the detector opens or joins one for it now.
// One still up when its incident was resolved (a person resolving while
// the latency held) stays with it: the detector pages again for it once,
// ten minutes later.
func (s *Store) RecordSpike(ctx context.Context, seriesKey string, sp correlate.Spike) (id int64, created bool, incidentID *int64, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		var back bool
		err := tx.db.QueryRow(ctx, `
			SELECT i.status = 'resolved' AND i.source = 'detector' AND i.group_key IS NULL
			       AND NOT s.ongoing AND s.end_at <= i.resolved_at
			FROM spikes s JOIN incidents i ON i.id = s.incident_id
			WHERE s.series_key = $1 AND s.start_at = $2
			FOR SHARE OF i`, seriesKey, sp.Start).Scan(&back)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return wrap("record spike", err)
		}
		return wrap("record spike", tx.db.QueryRow(ctx, `
			INSERT INTO spikes (series_key, role, level, model, version, replica, node, onset, start_at, end_at, ongoing,
			                    peak_time, peak_value, baseline, direction, detected_at, score, severity, peak_at_ceiling)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $20)
			ON CONFLICT (series_key, start_at) DO UPDATE SET
			  onset = EXCLUDED.onset, end_at = EXCLUDED.end_at, ongoing = EXCLUDED.ongoing, peak_time = EXCLUDED.peak_time,
			  peak_value = EXCLUDED.peak_value, score = EXCLUDED.score, severity = EXCLUDED.severity,
			  peak_at_ceiling = EXCLUDED.peak_at_ceiling,
			  incident_id = CASE WHEN $19 AND EXCLUDED.ongoing THEN NULL ELSE spikes.incident_id END
			RETURNING id, (xmax = 0), incident_id`,
			seriesKey, string(sp.Role), string(sp.Level), sp.Scope.Model, sp.Scope.Version, sp.Scope.Replica, sp.Scope.Node,
			sp.Onset, sp.Start, sp.End, sp.Ongoing, sp.PeakTime, sp.PeakValue, sp.Baseline, string(sp.Direction),
			sp.DetectedAt, sp.Score, sp.Severity, back, sp.PeakAtCeiling).Scan(&id, &created, &incidentID))
	})
	return id, created, incidentID, err
}

// ErrIncidentResolved means a spike was not attached: its incident was
// resolved after the detector found it open.
var ErrIncidentResolved = errors.New("incident resolved")

// AttachSpike links a recorded spike to the incident it opened or joined,
// if that incident is still open; ErrIncidentResolved otherwise. The
// detector finds the incident in one transaction and attaches in
// another: a resolution in between (a person, or another replica's
// detector closing it) left the new spike on a resolved incident, and
// nobody was paged for it. The row is read FOR SHARE, so a resolution in
// flight is waited for and seen.
func (s *Store) AttachSpike(ctx context.Context, spikeID, incidentID int64) error {
	tag, err := s.db.Exec(ctx, `UPDATE spikes SET incident_id = $2 WHERE id = $1
		AND EXISTS (SELECT 1 FROM incidents WHERE id = $2 AND status = 'open' FOR SHARE)`, spikeID, incidentID)
	if err != nil || tag.RowsAffected() == 1 {
		return wrap("attach spike", err)
	}
	var status string
	switch err := s.db.QueryRow(ctx, `SELECT status FROM incidents WHERE id = $1`, incidentID).Scan(&status); {
	case err != nil:
		return wrap("attach spike", err)
	case status != IncidentOpen:
		return ErrIncidentResolved
	}
	return nil // the spike is gone (settled as a blip meanwhile)
}

// ResolveQuietIncident is ResolveIncidentOnce for the detector's close
// pass, which judged the incident quiet from its spikes as they stood:
// none ongoing, none ending after quietSince (the latest end it read). It
// resolves only if that still holds, checked under the incident's row
// lock: another replica's detector (the lease changing hands) may attach
// an ongoing spike between the check and the resolution, and the
// resolved incident held it, with nobody paged. An attach in flight holds
// the row FOR SHARE until it commits, and is waited for; one that comes
// after the lock sees the incident resolved (ErrIncidentResolved).
func (s *Store) ResolveQuietIncident(ctx context.Context, id int64, at, quietSince time.Time) (Incident, bool, error) {
	resolved := false
	err := s.InTx(ctx, func(tx *Store) error {
		var open bool
		if err := tx.db.QueryRow(ctx, `SELECT status = 'open' FROM incidents WHERE id = $1 FOR UPDATE`, id).Scan(&open); err != nil || !open {
			return wrap("resolve quiet incident", err)
		}
		// A statement of its own, after the lock: its snapshot sees an
		// attach that committed while the lock was waited for.
		tag, err := tx.db.Exec(ctx, `
			UPDATE incidents SET status = 'resolved', resolved_at = $2,
			       end_at = COALESCE(end_at, GREATEST($2::timestamptz, start_at + interval '1 second')), updated_at = now()
			WHERE id = $1 AND status = 'open'
			  AND NOT EXISTS (SELECT 1 FROM spikes WHERE incident_id = $1 AND (ongoing OR end_at > $3))`, id, at, quietSince)
		resolved = tag.RowsAffected() == 1
		return wrap("resolve quiet incident", err)
	})
	if err != nil {
		return Incident{}, false, err
	}
	in, err := s.Incident(ctx, id)
	return in, resolved, err
}

// RecordedSpikes returns recorded spikes with onset in [from, to), newest first.
func (s *Store) RecordedSpikes(ctx context.Context, from, to time.Time, limit int) ([]RecordedSpike, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, series_key, incident_id, role, level, model, version, replica, node, onset, start_at, end_at, ongoing,
		       peak_time, peak_value, baseline, direction, detected_at, score, severity, peak_at_ceiling
		FROM spikes WHERE onset >= $1 AND onset < $2 ORDER BY onset DESC LIMIT $3`, from, to, limit)
	if err != nil {
		return nil, wrap("recorded spikes", err)
	}
	return scanRecordedSpikes(rows, "recorded spikes")
}

// scanRecordedSpikes reads the rows of a spikes query selecting every
// column, in RecordedSpikes' order; what names the query in errors.
func scanRecordedSpikes(rows pgx.Rows, what string) ([]RecordedSpike, error) {
	defer rows.Close()
	var out []RecordedSpike
	for rows.Next() {
		var (
			r                RecordedSpike
			role, level, dir string
		)
		if err := rows.Scan(&r.ID, &r.SeriesKey, &r.IncidentID, &role, &level, &r.Scope.Model, &r.Scope.Version, &r.Scope.Replica,
			&r.Scope.Node, &r.Onset, &r.Start, &r.End, &r.Ongoing, &r.PeakTime, &r.PeakValue, &r.Baseline, &dir,
			&r.DetectedAt, &r.Score, &r.Severity, &r.PeakAtCeiling); err != nil {
			return nil, wrap(what, err)
		}
		r.Role, r.Level, r.Direction = correlate.Role(role), correlate.Level(level), correlate.Direction(dir)
		out = append(out, r)
	}
	return out, wrap(what, rows.Err())
}

// SpikesOverlapping returns the recorded spikes whose [start, end]
// overlaps [from, to) and that belong to scope, newest onset first, at
// most limit. A spike belongs to scope when it is of the scope's model
// (any, when unset) and, for each of version, replica and node the scope
// sets, of that one — or of the whole model, when the scope names the
// model: a replica's page shows its model's spikes too. Tenants are not
// a spike's dimension and are ignored.
func (s *Store) SpikesOverlapping(ctx context.Context, from, to time.Time, scope correlate.Scope, limit int) ([]RecordedSpike, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, series_key, incident_id, role, level, model, version, replica, node, onset, start_at, end_at, ongoing,
		       peak_time, peak_value, baseline, direction, detected_at, score, severity, peak_at_ceiling
		FROM spikes
		WHERE end_at >= $1 AND start_at < $2
		  AND ($3 = '' OR model = $3)
		  AND ($4 = '' OR version = $4 OR (version = '' AND $3 <> ''))
		  AND ($5 = '' OR replica = $5 OR (replica = '' AND $3 <> ''))
		  AND ($6 = '' OR node = $6 OR (node = '' AND $3 <> ''))
		ORDER BY onset DESC, id DESC LIMIT $7`, from, to, scope.Model, scope.Version, scope.Replica, scope.Node, limit)
	if err != nil {
		return nil, wrap("spikes overlapping", err)
	}
	return scanRecordedSpikes(rows, "spikes overlapping")
}

// OpenDetectorIncident returns the open, detector-made incident whose
// window a spike of model at onset joins: it started before onset, either
// is still open-ended or ended less than merge before onset, and already
// holds a spike of the model or began less than merge before onset (models
// that slow down together share an incident; one that slows down hours
// into another's held regression gets its own, and its own page). One
// with no spike yet (opened, then the attach failed) counts from its
// start, which the detector sets 30 minutes before the first onset.
// One an alert group adopted (see ApplyAlertGroup) takes only spikes of
// its own model: its alert owns its scope. ErrNotFound if none.
func (s *Store) OpenDetectorIncident(ctx context.Context, model string, onset time.Time, merge time.Duration) (Incident, error) {
	in, err := scanIncident(s.db.QueryRow(ctx, incidentSelect+`
		WHERE i.source = 'detector' AND i.status = 'open' AND i.start_at <= $1
		  AND (i.end_at IS NULL OR i.end_at + $2 * interval '1 second' >= $1)
		  AND (i.group_key IS NULL OR i.model = $3)
		  AND (EXISTS (SELECT 1 FROM spikes s WHERE s.incident_id = i.id AND s.model = $3)
		       OR COALESCE((SELECT min(s.onset) FROM spikes s WHERE s.incident_id = i.id),
		                   i.start_at + interval '30 minutes') + $2 * interval '1 second' >= $1)
		ORDER BY i.start_at DESC LIMIT 1`, onset, merge.Seconds(), model))
	if err != nil {
		return Incident{}, wrap("open detector incident", err)
	}
	return in, nil
}

// OpenAlertIncidentFor returns the open Alertmanager incident a spike of
// model at onset belongs to: one scoped to that model whose window covers
// the onset (an alert fires a "for" after the spike's onset; its incident
// starts WATERLINE_ALERT_LOOKBACK before). A multi-model alert incident
// (no model) is not joined: which models its alerts name is not kept with
// it. ErrNotFound if none.
func (s *Store) OpenAlertIncidentFor(ctx context.Context, model string, onset time.Time) (Incident, error) {
	in, err := scanIncident(s.db.QueryRow(ctx, incidentSelect+`
		WHERE i.source = 'alertmanager' AND i.status = 'open' AND i.model = $1 AND $1 <> ''
		  AND i.start_at <= $2 AND (i.end_at IS NULL OR i.end_at >= $2)
		ORDER BY i.start_at DESC LIMIT 1`, model, onset))
	if err != nil {
		return Incident{}, wrap("open alert incident", err)
	}
	return in, nil
}

// detectorOpenLock serialises finding and opening incidents for a spike
// of a model: the detectors' (FindOrOpenDetectorIncident) and an alert
// group's (ApplyAlertGroup), which would otherwise both find nothing and
// open two incidents for one spike.
const detectorOpenLock = `SELECT pg_advisory_xact_lock(hashtext('waterline.detector.open'))`

// FindOrOpenDetectorIncident is OpenDetectorIncident, else
// OpenAlertIncidentFor (the spike joins the alert's incident, which its
// alert owns: the caller attaches the spike and changes nothing else),
// and, when neither finds one, CreateIncidentOnce(n), as one step under a
// transaction's advisory lock: two detectors passing at once (the detect
// lease changing hands), or a detector and an alert, otherwise both found
// nothing and opened two incidents for one spike. created says whether n
// was opened.
func (s *Store) FindOrOpenDetectorIncident(ctx context.Context, model string, onset time.Time, merge time.Duration, n NewIncident) (in Incident, created bool, err error) {
	err = s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, detectorOpenLock); err != nil {
			return wrap("lock detector incidents", err)
		}
		in, err = tx.OpenDetectorIncident(ctx, model, onset, merge)
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		in, err = tx.OpenAlertIncidentFor(ctx, model, onset)
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		in, created, err = tx.CreateIncidentOnce(ctx, n)
		return err
	})
	return in, created, err
}

// SetIncidentEnd sets (or clears, with nil) an open incident's window
// end. A resolved one keeps its window (the detector may have read it
// open just before someone resolved it): cleared, it would match every
// range and its window would grow to now.
func (s *Store) SetIncidentEnd(ctx context.Context, id int64, end *time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE incidents SET end_at = $2, updated_at = now() WHERE id = $1 AND status = 'open'`, id, end)
	return wrap("set incident end", err)
}

// WidenIncidentToFleet drops an incident's model scope and gives it a new
// title: a detector incident that another model's spike joined is about
// both, and an analysis scoped to the first model would ignore the second.
func (s *Store) WidenIncidentToFleet(ctx context.Context, id int64, title string) error {
	_, err := s.db.Exec(ctx, `UPDATE incidents SET model = '', version = '', title = $2, updated_at = now() WHERE id = $1 AND status = 'open'`, id, title)
	return wrap("widen incident", err)
}

// IncidentDataUntil returns the time of the newest stored point of the
// series an incident's spikes are on; ok is false when there is none.
func (s *Store) IncidentDataUntil(ctx context.Context, incidentID int64) (t time.Time, ok bool, err error) {
	var last *time.Time
	err = s.db.QueryRow(ctx, `
		SELECT max(p.time) FROM (SELECT DISTINCT series_key FROM spikes WHERE incident_id = $1) s
		JOIN series se ON se.key = s.series_key
		CROSS JOIN LATERAL (SELECT time FROM points WHERE series_id = se.id ORDER BY time DESC LIMIT 1) p`, incidentID).Scan(&last)
	if err != nil {
		return time.Time{}, false, wrap("incident data until", err)
	}
	if last == nil {
		return time.Time{}, false, nil
	}
	return last.UTC(), true, nil
}

// IncidentSpikeSpan returns, for an incident's recorded spikes, whether any
// is still ongoing and the latest end. ok is false when it has none.
func (s *Store) IncidentSpikeSpan(ctx context.Context, incidentID int64) (ongoing bool, lastEnd time.Time, ok bool, err error) {
	var end *time.Time
	err = s.db.QueryRow(ctx, `SELECT COALESCE(bool_or(ongoing), false), max(end_at) FROM spikes WHERE incident_id = $1`, incidentID).Scan(&ongoing, &end)
	if err != nil {
		return false, time.Time{}, false, wrap("incident spikes", err)
	}
	if end == nil {
		return false, time.Time{}, false, nil
	}
	return ongoing, end.UTC(), true, nil
}

// PendingSpike reports whether a spike of model (any model for "") that no
// incident holds yet is ongoing with its onset in [from, until] and one of
// the severities the detector opens incidents for: one it has recorded
// but not yet found worth an incident, which an open incident ending
// before it may still take in. A spike that began before the incident, or
// that is too mild ever to open one, never joins it: counting those kept
// a fleet incident open for a day behind another model's ×1.6 drift.
func (s *Store) PendingSpike(ctx context.Context, model string, from, until time.Time, severities []string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM spikes
		WHERE incident_id IS NULL AND ongoing AND onset >= $2 AND onset <= $3 AND ($1 = '' OR model = $1)
		  AND severity = ANY($4))`, model, from, until, severities).Scan(&ok)
	return ok, wrap("pending spike", err)
}

// FollowedModels returns, per model, the earliest onset before `before`
// of its spikes the detector must judge again: those still ongoing, and
// those of open detector incidents (a spike marked over because its data
// paused comes back ongoing when the data returns, if the latency is
// still up).
func (s *Store) FollowedModels(ctx context.Context, before time.Time) (map[string]time.Time, error) {
	rows, err := s.db.Query(ctx, `
		SELECT model, min(onset) FROM (
		  SELECT model, onset FROM spikes WHERE ongoing AND onset < $1
		  UNION ALL
		  SELECT s.model, s.onset FROM spikes s JOIN incidents i ON i.id = s.incident_id
		  WHERE i.status = 'open' AND i.source = 'detector' AND s.onset < $1) f
		GROUP BY model`, before)
	if err != nil {
		return nil, wrap("followed models", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var (
			m string
			t time.Time
		)
		if err := rows.Scan(&m, &t); err != nil {
			return nil, wrap("followed models", err)
		}
		out[m] = t.UTC()
	}
	return out, wrap("followed models", rows.Err())
}

// UnseenIncidentSpikes returns the ongoing spikes an incident points at
// that are not among seen (the ids the current pass recorded), at most
// 100, oldest first.
func (s *Store) UnseenIncidentSpikes(ctx context.Context, seen []int64) ([]RecordedSpike, error) {
	if seen == nil {
		seen = []int64{}
	}
	rows, err := s.db.Query(ctx, `
		SELECT id, series_key, incident_id, role, level, model, version, replica, node, onset, start_at, end_at, ongoing,
		       peak_time, peak_value, baseline, direction, detected_at, score, severity, peak_at_ceiling
		FROM spikes WHERE ongoing AND incident_id IS NOT NULL AND NOT (id = ANY($1)) ORDER BY onset LIMIT 100`, seen)
	if err != nil {
		return nil, wrap("unseen incident spikes", err)
	}
	return scanRecordedSpikes(rows, "unseen incident spikes")
}

// SettleSpikes handles recorded spikes that were still ongoing and are no
// longer detected. Those that started at or after from (inside the pass's
// lookback) were a blip that ended quickly, or drift: unattached ones are
// deleted, those an incident already points at are marked over. Those that
// started before from are beyond what the pass judges — the data stopped,
// or the lookback moved past them — and are marked over at the end last
// seen, so their incident can close rather than stay open for ever. seen
// are the ids the current pass recorded.
func (s *Store) SettleSpikes(ctx context.Context, from time.Time, seen []int64) error {
	if seen == nil {
		seen = []int64{}
	}
	return s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `DELETE FROM spikes WHERE ongoing AND start_at >= $1 AND NOT (id = ANY($2)) AND incident_id IS NULL`, from, seen); err != nil {
			return wrap("settle spikes", err)
		}
		_, err := tx.db.Exec(ctx, `UPDATE spikes SET ongoing = false WHERE ongoing AND NOT (id = ANY($1))`, seen)
		return wrap("settle spikes", err)
	})
}
