package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
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
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2 - interval '1 minute')`, id, at)
	return wrap("touch token", err)
}
