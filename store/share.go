package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
)

// Share tokens are read-only capabilities for one incident: whoever holds
// /s/{token} sees that incident's page and nothing else. The token is kept
// as is (not hashed, unlike API tokens) because the incident page shows the
// link again to signed-in users, who paste it into chat and tickets; it
// grants less than any API token does.

// shareTokenBytes gives 192 random bits: unguessable, and short enough for
// a chat message.
const shareTokenBytes = 24

// ShareIncident returns the incident's share token, creating one when it
// has none (sharing twice gives the same link). ErrNotFound for an unknown
// incident.
func (s *Store) ShareIncident(ctx context.Context, id int64) (string, error) {
	raw := make([]byte, shareTokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", wrap("share incident", err)
	}
	var tok string
	err := s.db.QueryRow(ctx, `UPDATE incidents SET share_token = COALESCE(share_token, $2), updated_at = now()
		WHERE id = $1 RETURNING share_token`, id, base64.RawURLEncoding.EncodeToString(raw)).Scan(&tok)
	if err != nil {
		return "", wrap("share incident", err)
	}
	return tok, nil
}

// RevokeShare removes the incident's share token: links made from it stop
// working at once. Revoking an unshared incident is harmless; ErrNotFound
// for an unknown incident.
func (s *Store) RevokeShare(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `UPDATE incidents SET share_token = NULL, updated_at = now() WHERE id = $1`, id)
	if err != nil {
		return wrap("revoke share", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// ShareToken returns the incident's share token, "" when it is not shared.
func (s *Store) ShareToken(ctx context.Context, id int64) (string, error) {
	var tok *string
	if err := s.db.QueryRow(ctx, `SELECT share_token FROM incidents WHERE id = $1`, id).Scan(&tok); err != nil {
		return "", wrap("share token", err)
	}
	if tok == nil {
		return "", nil
	}
	return *tok, nil
}

// SharedIncident returns the id of the incident a share token opens, or
// ErrNotFound (unknown or revoked token). Malformed tokens are not looked
// up at all.
func (s *Store) SharedIncident(ctx context.Context, token string) (int64, error) {
	if len(token) != base64.RawURLEncoding.EncodedLen(shareTokenBytes) {
		return 0, ErrNotFound
	}
	var id int64
	if err := s.db.QueryRow(ctx, `SELECT id FROM incidents WHERE share_token = $1`, token).Scan(&id); err != nil {
		return 0, wrap("shared incident", err)
	}
	return id, nil
}
