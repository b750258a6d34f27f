package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"strings"
	"time"
)

// TokenScope orders what a token may do: read < write < admin.
type TokenScope string

// The token scopes.
const (
	ScopeRead  TokenScope = "read"
	ScopeWrite TokenScope = "write"
	ScopeAdmin TokenScope = "admin"
)

// Allows reports whether a token of scope s may do what needs scope need.
func (s TokenScope) Allows(need TokenScope) bool { return s.rank() >= need.rank() }

func (s TokenScope) rank() int {
	switch s {
	case ScopeRead:
		return 1
	case ScopeWrite:
		return 2
	case ScopeAdmin:
		return 3
	}
	return 0
}

// Valid reports whether s is a known scope.
func (s TokenScope) Valid() bool { return s.rank() > 0 }

// Token is an API token's metadata; the secret itself is never stored.
type Token struct {
	ID         int64
	Name       string
	Scope      TokenScope
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// tokenPrefix makes leaked tokens easy to recognise in logs and by secret scanners.
const tokenPrefix = "wl_"

func hashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// CreateToken stores a new token and returns its secret, which is shown once
// and cannot be recovered: only its SHA-256 is kept.
func (s *Store) CreateToken(ctx context.Context, name string, scope TokenScope) (string, Token, error) {
	raw := make([]byte, 20)
	if _, err := rand.Read(raw); err != nil {
		return "", Token{}, wrap("create token", err)
	}
	secret := tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw))
	t := Token{Name: name, Scope: scope}
	err := s.db.QueryRow(ctx, `INSERT INTO api_tokens (name, scope, hash) VALUES ($1, $2, $3) RETURNING id, created_at`,
		name, string(scope), hashToken(secret)).Scan(&t.ID, &t.CreatedAt)
	if err != nil {
		return "", Token{}, wrap("create token", err)
	}
	return secret, t, nil
}

// LookupToken returns the live token whose secret is secret, or ErrNotFound.
func (s *Store) LookupToken(ctx context.Context, secret string) (Token, error) {
	want := hashToken(secret)
	var (
		t    Token
		hash []byte
		sc   string
	)
	err := s.db.QueryRow(ctx, `SELECT id, name, scope, hash, created_at, last_used_at FROM api_tokens
		WHERE hash = $1 AND revoked_at IS NULL`, want).Scan(&t.ID, &t.Name, &sc, &hash, &t.CreatedAt, &t.LastUsedAt)
	if err != nil {
		return Token{}, wrap("lookup token", err)
	}
	// The index lookup already matched; compare again in constant time so the
	// decision itself never depends on how many bytes matched.
	if subtle.ConstantTimeCompare(hash, want) != 1 {
		return Token{}, ErrNotFound
	}
	t.Scope = TokenScope(sc)
	return t, nil
}

// TouchToken records that a token was used (at most once a minute per token).
func (s *Store) TouchToken(ctx context.Context, id int64, at time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE api_tokens SET last_used_at = $2
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute')`, id, at)
	return wrap("touch token", err)
}

// TokenInfo is a token as listed for an admin: never its secret.
type TokenInfo struct {
	Token
	RevokedAt *time.Time
}

// ListTokens returns every token, live and revoked, oldest first.
func (s *Store) ListTokens(ctx context.Context) ([]TokenInfo, error) {
	rows, err := s.db.Query(ctx, `SELECT id, name, scope, created_at, last_used_at, revoked_at FROM api_tokens ORDER BY id`)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	defer rows.Close()
	var out []TokenInfo
	for rows.Next() {
		var (
			t  TokenInfo
			sc string
		)
		if err := rows.Scan(&t.ID, &t.Name, &sc, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt); err != nil {
			return nil, wrap("list tokens", err)
		}
		t.Scope = TokenScope(sc)
		out = append(out, t)
	}
	return out, wrap("list tokens", rows.Err())
}

// ErrAmbiguousToken is returned by RevokeToken when a name matches more
// than one live token: revoke those by id.
var ErrAmbiguousToken = errors.New("more than one live token has that name; revoke by id")

// RevokeToken revokes the live token with id byID (when byID > 0) or
// else the one named byName, and ends its browser sessions. It returns
// the token, or ErrNotFound when no live token matches.
func (s *Store) RevokeToken(ctx context.Context, byID int64, byName string, at time.Time) (Token, error) {
	var t Token
	err := s.InTx(ctx, func(tx *Store) error {
		rows, err := tx.db.Query(ctx, `SELECT id, name, scope, created_at, last_used_at FROM api_tokens
			WHERE revoked_at IS NULL AND (id = $1 OR ($1 = 0 AND name = $2)) FOR UPDATE`, byID, byName)
		if err != nil {
			return err
		}
		var found []Token
		for rows.Next() {
			var (
				x  Token
				sc string
			)
			if err := rows.Scan(&x.ID, &x.Name, &sc, &x.CreatedAt, &x.LastUsedAt); err != nil {
				rows.Close()
				return err
			}
			x.Scope = TokenScope(sc)
			found = append(found, x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		switch len(found) {
		case 0:
			return ErrNotFound
		case 1:
		default:
			return ErrAmbiguousToken
		}
		t = found[0]
		if _, err := tx.db.Exec(ctx, `UPDATE api_tokens SET revoked_at = $2 WHERE id = $1`, t.ID, at); err != nil {
			return err
		}
		if _, err := tx.db.Exec(ctx, `DELETE FROM ui_sessions WHERE token_id = $1`, t.ID); err != nil {
			return err
		}
		return tx.notifyAuth(ctx)
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrAmbiguousToken) {
		return Token{}, err
	}
	return t, wrap("revoke token", err)
}
