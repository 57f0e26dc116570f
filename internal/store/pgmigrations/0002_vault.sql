-- The secret vault (package vault). A value exists only as AES-256-GCM
-- ciphertext; name and purpose are the operator's plain labels.
CREATE TABLE vault_secrets (
  name        TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 64),
  purpose     TEXT NOT NULL DEFAULT '',
  nonce       BYTEA NOT NULL,
  ciphertext  BYTEA NOT NULL,
  created_at  BIGINT NOT NULL, -- unix milliseconds
  updated_at  BIGINT NOT NULL
);
