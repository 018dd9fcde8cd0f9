-- The caller's identity for agents that act on the caller's behalf (internal/identity).
--
-- agents.caller_identity: the tenant asked that the agent receive, on every call of a turn
-- that names the platform's user, a short-lived JWT signed by the platform.
alter table agents
	add column caller_identity boolean not null default false;

-- identity_keys are the platform's token signing keys (ES256). The private key is sealed by
-- internal/secret (PKCS #8 DER, associated data "identity-key:" || kid) like every other
-- secret; the public key is kept in the clear as a JWK for the JWKS. One key signs at a time
-- (retired_at is null), which the partial unique index guarantees even when two replicas create
-- the first key at once: the loser's insert does nothing and it reads the winner's key.
-- A rotation retires the signing key and inserts a new one in one transaction; a retired key
-- stays published in the JWKS until every token it may have signed has expired, and is deleted
-- by a later rotation.
create table identity_keys (
	kid                    text primary key,
	public_jwk             jsonb not null,
	private_key_ciphertext bytea not null,
	private_key_key_id     text not null,
	created_at             timestamptz not null default now(),
	retired_at             timestamptz
);
create unique index identity_keys_one_signing on identity_keys ((true)) where retired_at is null;

-- identity_pairwise holds the one secret the pairwise subjects are derived from
-- (HMAC-SHA256(secret, tenant id || 0x00 || user id)), sealed with the associated data
-- "identity-pairwise". A single row: the check on id allows only true.
create table identity_pairwise (
	id                 boolean primary key default true constraint identity_pairwise_single check (id),
	secret_ciphertext  bytea not null,
	secret_key_id      text not null,
	created_at         timestamptz not null default now()
);
