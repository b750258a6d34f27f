package store

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Share tokens are read-only capabilities for one incident: whoever holds
// /s/{token} sees that incident's page and nothing else. Like API tokens,
// only their SHA-256 is kept (share_links.hash): a link is shown once,
// when it is made, and making a new one replaces it.
//
// An incident has its own link (made in the UI or through the API) and,
// for each webhook set to carry links, one per webhook, derived from the
// webhook's secret so that every delivery about the incident carries the
// same link without it being stored. Revoking an incident's sharing
// revokes all of them, and no webhook makes a new one until the incident
// is shared again; a webhook's link, once revoked, stays revoked.

// shareTokenBytes gives 192 random bits: unguessable, and short enough for
// a chat message.
const shareTokenBytes = 24

// ShareLink says whether and since when an incident has its own link.
type ShareLink struct {
	CreatedAt time.Time
}

func hashShareToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// newShareToken draws a token that ends in a letter or digit. Chat and
// Markdown autolinkers leave trailing punctuation out of a link (GFM's
// extended autolinks drop a final "_": Mattermost, GitHub, GitLab), so a
// token ending in "_" — one in 64 — opened a 404 wherever it was pasted.
// "-" is kept off the end too. The last character keeps log2(62) of its 6
// bits: the token still has ~192 random bits.
func newShareToken() (string, error) {
	raw := make([]byte, shareTokenBytes)
	for {
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		tok := base64.RawURLEncoding.EncodeToString(raw)
		if c := tok[len(tok)-1]; c != '_' && c != '-' {
			return tok, nil
		}
	}
}

// CreateShareLink makes a new link for the incident, replacing its
// previous one (which stops working at once), and returns the token: the
// only time it can be read. ErrNotFound for an unknown incident.
func (s *Store) CreateShareLink(ctx context.Context, id int64) (string, error) {
	tok, err := newShareToken()
	if err != nil {
		return "", wrap("create share link", err)
	}
	var ok bool
	// Sharing is not a change of the incident: updated_at (which webhooks
	// date a resolution by) stays as it is.
	// Re-sharing lifts an earlier revoke: webhooks may carry links again
	// (the ones revoked stay revoked).
	err = s.db.QueryRow(ctx, `WITH on_again AS (UPDATE incidents SET share_revoked_at = NULL WHERE id = $1 AND share_revoked_at IS NOT NULL)
		INSERT INTO share_links (incident_id, hash) SELECT id, $2 FROM incidents WHERE id = $1
		ON CONFLICT (incident_id, (COALESCE(webhook_id, 0)))
		DO UPDATE SET hash = EXCLUDED.hash, created_at = now(), revoked_at = NULL
		RETURNING true`, id, hashShareToken(tok)).Scan(&ok)
	if err != nil {
		return "", wrap("create share link", err)
	}
	return tok, nil
}

// RevokeShare revokes every link of the incident (its own and its
// webhooks'): they stop working at once. Revoking an unshared incident is
// harmless; ErrNotFound for an unknown incident.
func (s *Store) RevokeShare(ctx context.Context, id int64) error {
	// The revoke is marked on the incident first: that row lock waits for
	// a webhook's first link being made (WebhookShareToken reads the mark
	// FOR SHARE), and the next statement, with a fresh snapshot, revokes
	// that link too. The incident's own link goes; webhooks' links stay as
	// revoked rows, and no webhook makes a new one until it is re-shared.
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `UPDATE incidents SET share_revoked_at = now() WHERE id = $1 RETURNING true`, id).Scan(&exists); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH own AS (DELETE FROM share_links WHERE incident_id = $1 AND webhook_id IS NULL)
			UPDATE share_links SET revoked_at = now() WHERE incident_id = $1 AND webhook_id IS NOT NULL AND revoked_at IS NULL`, id)
		return err
	})
	return wrap("revoke share", err)
}

// IncidentShareLink reports whether the incident has its own live link,
// and since when (the token itself cannot be read back).
func (s *Store) IncidentShareLink(ctx context.Context, id int64) (ShareLink, bool, error) {
	var l ShareLink
	err := s.db.QueryRow(ctx, `SELECT created_at FROM share_links WHERE incident_id = $1 AND webhook_id IS NULL AND revoked_at IS NULL`,
		id).Scan(&l.CreatedAt)
	if err != nil {
		if err = wrap("share link", err); err == ErrNotFound {
			return ShareLink{}, false, nil
		}
		return ShareLink{}, false, err
	}
	return l, true, nil
}

// WebhookShareLinks counts the incident's live links that webhooks'
// deliveries carry: they open the incident as its own link does.
func (s *Store) WebhookShareLinks(ctx context.Context, id int64) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM share_links WHERE incident_id = $1 AND webhook_id IS NOT NULL AND revoked_at IS NULL`,
		id).Scan(&n)
	return n, wrap("webhook share links", err)
}

// webhookShareToken derives a webhook's link for an incident from the
// webhook's secret, kept off a trailing "_" or "-" as newShareToken keeps
// a drawn one: the next derivation (a counter appended) is taken instead.
// legacy is the first derivation, which links delivered before this rule
// are: they stay the incident's link for that webhook.
func webhookShareToken(secret string, incidentID, hookID int64) (tok, legacy string) {
	msg := "waterline share link\x00" + strconv.FormatInt(incidentID, 10) + "\x00" + strconv.FormatInt(hookID, 10)
	for i := 0; ; i++ {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(msg))
		if i > 0 {
			mac.Write([]byte("\x00" + strconv.Itoa(i)))
		}
		tok = base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:shareTokenBytes])
		if i == 0 {
			legacy = tok
		}
		if c := tok[len(tok)-1]; c != '_' && c != '-' {
			return tok, legacy
		}
	}
}

// WebhookShareToken returns the link a webhook's deliveries carry for an
// incident: derived from the webhook's secret (the same every time, so
// nothing but its hash is stored), registered on first use. ok is false
// when the incident's sharing was revoked since.
func (s *Store) WebhookShareToken(ctx context.Context, incidentID int64, hook Webhook) (string, bool, error) {
	tok, legacy := webhookShareToken(hook.Secret, incidentID, hook.ID)
	hash, legacyHash := hashShareToken(tok), hashShareToken(legacy)
	var revoked bool
	var stored []byte
	var err error
	for range 2 { // a concurrent first use may hide the row from this statement: look again
		err = s.db.QueryRow(ctx, `WITH inc AS (
			SELECT share_revoked_at IS NOT NULL AS off FROM incidents WHERE id = $1 FOR SHARE),
		ins AS (
			INSERT INTO share_links (incident_id, webhook_id, hash) SELECT $1, $2, $3 FROM inc WHERE NOT off
			ON CONFLICT DO NOTHING RETURNING false AS revoked, hash)
		SELECT revoked, hash FROM ins
		UNION ALL
		SELECT revoked_at IS NOT NULL, hash FROM share_links WHERE incident_id = $1 AND webhook_id = $2
		UNION ALL
		SELECT true, NULL::bytea FROM inc WHERE off
		LIMIT 1`, incidentID, hook.ID, hash).Scan(&revoked, &stored)
		if err = wrap("webhook share link", err); err != ErrNotFound {
			break
		}
	}
	if err != nil {
		return "", false, err
	}
	switch {
	case revoked:
		return "", false, nil
	case bytes.Equal(stored, hash):
		return tok, true, nil
	case bytes.Equal(stored, legacyHash): // delivered before the trailing-character rule
		return legacy, true, nil
	}
	return "", false, nil // made under another secret: that link stays dead
}

// SharedIncident returns the id of the incident a share token opens, or
// ErrNotFound (unknown or revoked token). Malformed tokens are not looked
// up at all.
func (s *Store) SharedIncident(ctx context.Context, token string) (int64, error) {
	if len(token) != base64.RawURLEncoding.EncodedLen(shareTokenBytes) {
		return 0, ErrNotFound
	}
	var id int64
	if err := s.db.QueryRow(ctx, `SELECT incident_id FROM share_links WHERE hash = $1 AND revoked_at IS NULL`,
		hashShareToken(token)).Scan(&id); err != nil {
		return 0, wrap("shared incident", err)
	}
	return id, nil
}

// PageState is what an incident page depends on besides live data: when
// the incident last changed, its newest analysis, its snapshot and its own
// share link. Page caches key on it.
type PageState struct {
	IncidentID      int64
	UpdatedAt       time.Time
	AnalysisVersion int
	AnalysisStatus  string     // "" when none was started
	SnapshotAt      *time.Time // nil when not frozen
	SharedAt        *time.Time // when the incident's own link was made; nil when it has none
	WebhookShares   int        // live links webhooks' deliveries carry
}

const pageStateQuery = `SELECT i.id, i.updated_at, COALESCE(a.version, 0), COALESCE(a.status, ''), sn.created_at, own.created_at,
	(SELECT count(*) FROM share_links w WHERE w.incident_id = i.id AND w.webhook_id IS NOT NULL AND w.revoked_at IS NULL)
	FROM incidents i
	LEFT JOIN LATERAL (SELECT version, status FROM analyses WHERE incident_id = i.id ORDER BY version DESC LIMIT 1) a ON true
	LEFT JOIN snapshots sn ON sn.incident_id = i.id
	LEFT JOIN share_links own ON own.incident_id = i.id AND own.webhook_id IS NULL AND own.revoked_at IS NULL
	WHERE `

func (s *Store) pageState(ctx context.Context, op, where string, arg any) (PageState, error) {
	var st PageState
	err := s.db.QueryRow(ctx, pageStateQuery+where, arg).
		Scan(&st.IncidentID, &st.UpdatedAt, &st.AnalysisVersion, &st.AnalysisStatus, &st.SnapshotAt, &st.SharedAt, &st.WebhookShares)
	if err != nil {
		return PageState{}, wrap(op, err)
	}
	return st, nil
}

// IncidentPageState returns an incident's PageState in one query, or
// ErrNotFound.
func (s *Store) IncidentPageState(ctx context.Context, id int64) (PageState, error) {
	return s.pageState(ctx, "incident page state", `i.id = $1`, id)
}

// SharedState returns the PageState of the incident a share token opens,
// in one query, or ErrNotFound (unknown, revoked or malformed token).
func (s *Store) SharedState(ctx context.Context, token string) (PageState, error) {
	if len(token) != base64.RawURLEncoding.EncodedLen(shareTokenBytes) {
		return PageState{}, ErrNotFound
	}
	return s.pageState(ctx, "shared state",
		`i.id = (SELECT incident_id FROM share_links WHERE hash = $1 AND revoked_at IS NULL)`, hashShareToken(token))
}
