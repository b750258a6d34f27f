-- Browser sessions of the UI: made by the token login page (token_id set;
-- revoking the token ends its sessions) or for a user an auth proxy vouched
-- for (token_id NULL). Only a SHA-256 of the cookie secret is stored; csrf
-- is the per-session token every form and htmx request must echo.
CREATE TABLE ui_sessions (
    hash       bytea PRIMARY KEY,
    token_id   bigint REFERENCES api_tokens (id) ON DELETE CASCADE,
    user_name  text NOT NULL,
    scope      text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    csrf       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX ui_sessions_expires_idx ON ui_sessions (expires_at);
