-- The kind of credential an agent's sealed secret is (issue 24). The secret itself stays in
-- api_key_ciphertext / api_key_key_id, sealed by internal/secret with the agent id as
-- associated data, whatever its kind: an API key or bearer token is the plaintext itself; an
-- OAuth 2.0 client is {"clientId", "clientSecret", "scopes", "tokenUrl"} as JSON; a Google
-- service account is its JSON key file. One column, not one per kind: a registration holds
-- exactly one credential, and the turn path reads one sealed value as before.
--
-- Rows stored before this migration hold API keys, hence the default.
alter table agents
	add column credential_kind text not null default 'apiKey'
		constraint agents_credential_kind check (credential_kind in ('apiKey', 'bearerToken', 'oauth2', 'googleServiceAccount'));
