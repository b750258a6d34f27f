package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Session is a signed-in browser: who it is, what it may do, and the CSRF
// token its forms carry.
type Session struct {
	User      string
	Scope     TokenScope
	TokenID   *int64 // the API token used at login; nil for auth-proxy sessions
	CSRF      string
	ExpiresAt time.Time
}

func randomToken(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// CreateSession stores a new session and returns its cookie secret (shown
// to the browser only; the database keeps its SHA-256).
func (s *Store) CreateSession(ctx context.Context, user string, scope TokenScope, tokenID *int64, ttl time.Duration, now time.Time) (string, Session, error) {
	secret, err := randomToken(32)
	if err != nil {
		return "", Session{}, wrap("create session", err)
	}
	csrf, err := randomToken(24)
	if err != nil {
		return "", Session{}, wrap("create session", err)
	}
	se := Session{User: user, Scope: scope, TokenID: tokenID, CSRF: csrf, ExpiresAt: now.Add(ttl).UTC()}
	_, err = s.db.Exec(ctx, `INSERT INTO ui_sessions (hash, token_id, user_name, scope, csrf, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, hashToken(secret), tokenID, user, string(scope), csrf, se.ExpiresAt)
	if err != nil {
		return "", Session{}, wrap("create session", err)
	}
	return secret, se, nil
}

// LookupSession returns the live session of a cookie secret: not expired
// and, for a token login, with its token not revoked. ErrNotFound otherwise.
func (s *Store) LookupSession(ctx context.Context, secret string, now time.Time) (Session, error) {
	var (
		se    Session
		scope string
	)
	err := s.db.QueryRow(ctx, `
		SELECT u.user_name, u.scope, u.token_id, u.csrf, u.expires_at
		FROM ui_sessions u LEFT JOIN api_tokens t ON t.id = u.token_id
		WHERE u.hash = $1 AND u.expires_at > $2 AND (u.token_id IS NULL OR t.revoked_at IS NULL)`,
		hashToken(secret), now).Scan(&se.User, &scope, &se.TokenID, &se.CSRF, &se.ExpiresAt)
	if err != nil {
		return Session{}, wrap("lookup session", err)
	}
	se.Scope = TokenScope(scope)
	return se, nil
}

// DeleteSession ends a session (logout) and, while at it, drops expired ones.
func (s *Store) DeleteSession(ctx context.Context, secret string, now time.Time) error {
	err := s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, `DELETE FROM ui_sessions WHERE hash = $1 OR expires_at < $2`, hashToken(secret), now); err != nil {
			return err
		}
		return tx.notifyAuth(ctx)
	})
	return wrap("delete session", err)
}

// SessionSecretHash is the key under which callers may cache a session: the
// same hash the database uses, so a cache never holds raw secrets.
func SessionSecretHash(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// ProxySession returns the one session of a user an auth proxy vouches
// for (user is "proxy:<name>"), creating it on first use: requests
// without a cookie reuse it instead of adding a row each. It carries the
// CSRF token the user's pages and forms share, and the scope the
// operator gives proxy users (updated when that setting changes). Its
// expiry slides: past half its lifetime, a use extends it by ttl.
func (s *Store) ProxySession(ctx context.Context, user string, scope TokenScope, ttl time.Duration, now time.Time) (Session, error) {
	var se Session
	err := s.InTx(ctx, func(tx *Store) error {
		// One writer per user, so two first requests make one session.
		if _, err := tx.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('ui_sessions:' || $1, 0))`, user); err != nil {
			return err
		}
		var (
			hash []byte
			sc   string
		)
		err := tx.db.QueryRow(ctx, `SELECT hash, scope, csrf, expires_at FROM ui_sessions
			WHERE user_name = $1 AND token_id IS NULL AND expires_at > $2 ORDER BY expires_at DESC LIMIT 1`,
			user, now).Scan(&hash, &sc, &se.CSRF, &se.ExpiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			_, se, err = tx.CreateSession(ctx, user, scope, nil, ttl, now)
			return err
		}
		if err != nil {
			return err
		}
		se.User, se.Scope = user, scope
		if TokenScope(sc) != scope || se.ExpiresAt.Before(now.Add(ttl/2)) {
			se.ExpiresAt = now.Add(ttl).UTC()
			_, err = tx.db.Exec(ctx, `UPDATE ui_sessions SET scope = $2, expires_at = $3 WHERE hash = $1`, hash, string(scope), se.ExpiresAt)
		}
		return err
	})
	return se, wrap("proxy session", err)
}
